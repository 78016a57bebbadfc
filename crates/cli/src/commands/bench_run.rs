//! `ubt bench run`, `ubt bench sweep` and the default `ubt bench`.

use std::path::{Path, PathBuf};

use ubt_bench::gen::{gen_chain, ChainParams, WorkloadMeta};
use ubt_bench::studies::runner::geth::{default_source_dir, GethEngine};
use ubt_bench::studies::runner::kind::Workload;
use ubt_bench::studies::runner::{
    run as run_bench, FlatMode, PrefetchMode, RunConfig, RunEvent, RunOutcome,
};
use ubt_evm::workloads::BlockShape;

use crate::cli::{
    DefaultBenchArgs, FlatArg, PeersArg, PrefetchArg, RunArgs, RunCommonArgs, ShapeArg, SweepArgs,
};
use crate::error::CliError;
use crate::output;
use crate::progress::PhaseBars;

/// The command line as typed, for the report.
fn command_line() -> String {
    let args: Vec<String> = std::env::args().collect();
    let mut words = vec!["ubt".to_owned()];
    words.extend(args.into_iter().skip(1));
    words.join(" ")
}

/// The peer configurations of `--peers` (a list; `none` adds nothing),
/// each once, in the order given: the binary trie at `group_depth`, geth
/// over ubt at `ubt_group_depth` (its flat-index setting is the runner's:
/// one geth-ubt configuration per `--flat-index` variant).
fn peers(args: &[PeersArg], group_depth: u8, ubt_group_depth: u8) -> Vec<GethEngine> {
    let bintrie = GethEngine::BinTrie { group_depth };
    let ubt = GethEngine::Ubt {
        group_depth: ubt_group_depth,
        flat: true,
    };
    let mut out = Vec::new();
    for arg in args {
        let engines = match arg {
            PeersArg::Geth => vec![bintrie, GethEngine::Mpt],
            PeersArg::GethBintrie => vec![bintrie],
            PeersArg::GethMpt => vec![GethEngine::Mpt],
            PeersArg::GethUbt => vec![ubt],
            PeersArg::None => Vec::new(),
        };
        for engine in engines {
            if !out.contains(&engine) {
                out.push(engine);
            }
        }
    }
    out
}

fn prefetch(arg: PrefetchArg) -> PrefetchMode {
    match arg {
        PrefetchArg::Off => PrefetchMode::Off,
        PrefetchArg::On => PrefetchMode::On,
        PrefetchArg::Both => PrefetchMode::Both,
    }
}

fn shape(arg: ShapeArg) -> BlockShape {
    match arg {
        ShapeArg::Gd => BlockShape::Gd,
        ShapeArg::Mpt => BlockShape::Mpt,
    }
}

/// Parses `1..8` (inclusive) or `1,3,5`.
pub fn parse_group_depths(text: &str) -> Result<Vec<u8>, CliError> {
    let bad = || {
        CliError::Argument(format!(
            "--group-depths {text:?}: expected a range like 1..8 or a list like 2,4,6 (each 1..=8)"
        ))
    };
    let depths: Vec<u8> = if let Some((a, b)) = text.split_once("..") {
        let a: u8 = a.trim().parse().map_err(|_| bad())?;
        let b: u8 = b
            .trim()
            .trim_start_matches('=')
            .parse()
            .map_err(|_| bad())?;
        if a > b {
            return Err(bad());
        }
        (a..=b).collect()
    } else {
        text.split(',')
            .map(|d| d.trim().parse::<u8>().map_err(|_| bad()))
            .collect::<Result<_, _>>()?
    };
    if depths.is_empty() || depths.iter().any(|d| !(1..=8).contains(d)) {
        return Err(bad());
    }
    Ok(depths)
}

fn config(
    common: &RunCommonArgs,
    group_depths: Vec<u8>,
    prefetch_mode: PrefetchArg,
    peers_arg: &[PeersArg],
) -> Result<RunConfig, CliError> {
    let workloads = match &common.workloads {
        None => None,
        Some(names) => Some(
            names
                .iter()
                .map(|name| {
                    name.parse::<Workload>()
                        .map_err(|e| CliError::Argument(e.to_string()))
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    for state in &common.states {
        if !Path::new(state).join("workload.json").is_file() {
            return Err(CliError::Argument(format!(
                "--state {state}: no workload.json there (make one with `ubt bench gen`)"
            )));
        }
    }
    // geth over ubt runs at ubt's (first) group depth.
    let ubt_group_depth = group_depths
        .first()
        .copied()
        .unwrap_or(ubt_engine::DEFAULT_GROUP_DEPTH);
    Ok(RunConfig {
        states: common.states.iter().map(PathBuf::from).collect(),
        out_dir: PathBuf::from(&common.out),
        workloads,
        shape: shape(common.shape),
        blocks: common.blocks,
        runs: common.runs,
        group_depths,
        prefetch: prefetch(prefetch_mode),
        flat_index: match common.flat_index {
            FlatArg::On => FlatMode::On,
            FlatArg::Off => FlatMode::Off,
            FlatArg::Both => FlatMode::Both,
        },
        peers: peers(peers_arg, common.geth_group_depth, ubt_group_depth),
        peer_source: common
            .peer_source
            .as_ref()
            .map_or_else(default_source_dir, PathBuf::from),
        warm: common.warm,
        memory_budget_bytes: common.memory_mib.map(|mib| mib << 20),
        direct_reads: common.direct_reads,
        device_probe: (!common.no_device)
            .then(ubt_bench::measure::device::DeviceProbeOptions::default),
        command: command_line(),
    })
}

fn execute(config: &RunConfig, bars: &mut PhaseBars) -> Result<RunOutcome, CliError> {
    let outcome = run_bench(config, &mut |event| match event {
        RunEvent::Phase { label, total } => bars.phase(&label, total),
        RunEvent::Advance(n) => bars.advance(n),
        RunEvent::Done => bars.done(),
        RunEvent::Note(text) => bars.note(&text),
    })?;
    bars.done();
    output::line(format_args!(
        "{} runs now, {} resumed; metrics: {}",
        outcome.runs_done,
        outcome.runs_resumed,
        output::path(&outcome.metrics_path)
    ))?;
    output::line(format_args!(
        "report: {}",
        output::path(&outcome.report.markdown)
    ))?;
    Ok(outcome)
}

/// Runs `ubt bench run`.
pub fn run(args: &RunArgs) -> Result<(), CliError> {
    let config = config(
        &args.common,
        vec![args.group_depth],
        args.prefetch,
        &args.peers,
    )?;
    execute(&config, &mut PhaseBars::default()).map(|_| ())
}

/// Runs `ubt bench sweep`.
pub fn sweep(args: &SweepArgs) -> Result<(), CliError> {
    let depths = parse_group_depths(&args.group_depths)?;
    let config = config(&args.common, depths, args.prefetch, &args.peers)?;
    execute(&config, &mut PhaseBars::default()).map(|_| ())
}

/// Runs the default `ubt bench`: generates the chain-like state once (kept
/// in `<out>/state-chain-<entries>`), then runs the default workloads on
/// ubt (both read variants) and the peers.
pub fn default(args: &DefaultBenchArgs) -> Result<(), CliError> {
    if args.entries < 200_000 {
        return Err(CliError::Argument(
            "--entries must be at least 200000 (the token and the sequential contract alone \
             take about 190,000)"
                .into(),
        ));
    }
    let mut bars = PhaseBars::default();
    let out = PathBuf::from(&args.out);
    let state_dir = out.join(format!("state-chain-{}", args.entries));
    let params = ChainParams::new(args.entries, 25519, 100_000);
    let fresh = WorkloadMeta::read(&state_dir)
        .map(|meta| {
            meta.seed != params.seed
                || meta.chain.map(|c| c.target_entries) != Some(args.entries)
                || !state_dir.join("state.jsonl").is_file()
        })
        .unwrap_or(true);
    if fresh {
        bars.phase("generating the chain-like state", args.entries);
        let mut last = 0;
        gen_chain(&state_dir, &params, &mut |p| {
            bars.advance(p.done.saturating_sub(last));
            last = p.done;
        })?;
        bars.done();
    }
    let common = RunCommonArgs {
        states: vec![state_dir.display().to_string()],
        out: args.out.clone(),
        workloads: None,
        shape: ShapeArg::Gd,
        blocks: args.blocks,
        runs: args.runs,
        flat_index: FlatArg::On,
        warm: false,
        no_device: false,
        memory_mib: None,
        direct_reads: false,
        geth_group_depth: 5,
        peer_source: None,
    };
    let config = config(
        &common,
        vec![ubt_engine::DEFAULT_GROUP_DEPTH],
        PrefetchArg::Both,
        &args.peers,
    )?;
    execute(&config, &mut bars).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_lists() {
        let bintrie = GethEngine::BinTrie { group_depth: 5 };
        let ubt = GethEngine::Ubt {
            group_depth: 6,
            flat: true,
        };
        assert_eq!(peers(&[PeersArg::GethUbt], 5, 6), vec![ubt]);
        assert_eq!(
            peers(&[PeersArg::GethUbt, PeersArg::GethBintrie], 5, 6),
            vec![ubt, bintrie]
        );
        assert_eq!(
            peers(
                &[PeersArg::Geth, PeersArg::GethUbt, PeersArg::GethMpt],
                5,
                4
            ),
            vec![
                bintrie,
                GethEngine::Mpt,
                GethEngine::Ubt {
                    group_depth: 4,
                    flat: true
                }
            ]
        );
        assert!(peers(&[PeersArg::None], 5, 6).is_empty());
    }

    #[test]
    fn group_depth_lists_and_ranges() {
        assert_eq!(
            parse_group_depths("1..8").unwrap(),
            (1..=8).collect::<Vec<u8>>()
        );
        assert_eq!(parse_group_depths("2,4, 6").unwrap(), vec![2, 4, 6]);
        for bad in ["0..3", "5..2", "9", "a", "", "1..9"] {
            assert!(parse_group_depths(bad).is_err(), "{bad}");
        }
    }
}
