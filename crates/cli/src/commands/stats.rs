//! `ubt stats`: a database's shape, memory and I/O counters.

use ubt_engine::Stats;

use crate::cli::StatsArgs;
use crate::db::{hex32, open_existing};
use crate::error::CliError;
use crate::output;

/// Runs `ubt stats`: a two-column table, or one JSON object with `--json`.
pub fn run(args: &StatsArgs) -> Result<(), CliError> {
    let stats = open_existing(&args.db)?.stats();
    if args.json {
        let text = serde_json::to_string_pretty(&stats).map_err(|e| CliError::Write {
            target: "<stdout>".into(),
            reason: format!("cannot encode the statistics as JSON: {e}"),
        })?;
        output::line(text)?;
    } else {
        for (name, value) in rows(&stats) {
            output::line(format_args!("{name:<20} {value}"))?;
        }
    }
    Ok(())
}

/// The table's rows: label and value.
fn rows(s: &Stats) -> Vec<(&'static str, String)> {
    let n = |v: u64| v.to_string();
    vec![
        ("root", hex32(&s.root)),
        ("group depth", s.group_depth.to_string()),
        ("bucket capacity", format!("{} bytes", s.bucket_bytes)),
        ("generation", n(s.generation)),
        ("commit seq", n(s.commit_seq)),
        ("values", n(s.leaf_count)),
        ("stems", n(s.stem_count)),
        ("buckets", n(s.bucket_count)),
        ("upper-trie nodes", n(s.upper_node_count)),
        ("pages", n(s.page_count)),
        ("bucket depth max", n(s.bucket_depth_max)),
        ("bucket depth mean", format!("{:.2}", s.bucket_depth_mean)),
        ("data file bytes", n(s.data_file_bytes)),
        ("data used bytes", n(s.data_used_bytes)),
        ("page blocks", n(s.page_blocks)),
        ("page live bytes", n(s.page_live_bytes)),
        ("wal bytes", n(s.wal_bytes)),
        ("dirty buckets", n(s.dirty_buckets)),
        ("dirty bytes", n(s.dirty_bytes)),
        ("cache bytes", n(s.cache_bytes)),
        ("upper-trie bytes", n(s.upper_trie_bytes)),
        ("memory budget", n(s.memory_budget_bytes)),
        ("bucket reads", n(s.bucket_reads)),
        ("bucket read bytes", n(s.bucket_read_bytes)),
        ("cache hits", n(s.cache_hits)),
        ("data bytes written", n(s.data_bytes_written)),
        ("wal bytes written", n(s.wal_bytes_written)),
        ("meta bytes written", n(s.meta_bytes_written)),
        ("commits", n(s.commits)),
        ("checkpoints", n(s.checkpoints)),
        ("flat index", if s.flat_index { "yes" } else { "no" }.into()),
        ("flat records", n(s.flat_records)),
        ("flat leaves", n(s.flat_leaves)),
        ("flat nodes", n(s.flat_nodes)),
        ("flat changes", n(s.flat_changes)),
        ("flat dense stems", n(s.flat_dense_stems)),
        ("flat stem changes", n(s.flat_stem_changes)),
        ("flat directory bytes", n(s.flat_directory_bytes)),
        ("read backend", s.read_backend.clone()),
        (
            "direct reads",
            if s.direct_reads { "yes" } else { "no" }.into(),
        ),
        (
            "poisoned",
            s.poisoned.clone().unwrap_or_else(|| "no".into()),
        ),
    ]
}
