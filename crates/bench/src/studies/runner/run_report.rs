//! The report of a run: the block-metrics report with a setup section
//! (the command, the machine, the device, the protocol, the loads, the
//! notes).

use super::db_cache::LoadMarker;
use super::device_figures::DeviceProbe;
use super::RunConfig;
use crate::formats::metrics::BlockMetrics;
use crate::report::{write_report, ReportOptions, WrittenReport};
use crate::BenchError;

/// The report's line about the device.
fn device_line(probe: &DeviceProbe) -> String {
    let device = &probe.limits;
    let qd32_us = if device.qd32_reads_per_s > 0.0 {
        1e6 / device.qd32_reads_per_s
    } else {
        f64::NAN
    };
    format!(
        "Device (probed {} in this output directory, {} random 4 KiB reads of a {} MiB \
         file): \
         QD1 p50 {:.0} us; QD{} {:.0} reads/s ({}), i.e. {:.1} us = {:.4} ms per read. \
         A `ms/miss` near that figure means the engine's misses ran at the device's \
         queue-depth-{} limit; well above it, reads were issued one at a time or \
         the time went elsewhere.\n\n",
        probe.measured,
        if device.direct_io {
            "O_DIRECT"
        } else {
            "buffered"
        },
        device.file_bytes >> 20,
        device.qd1_latency_p50_us,
        device.qd32_queue_depth,
        device.qd32_reads_per_s,
        device.qd32_backend,
        qd32_us,
        qd32_us / 1e3,
        device.qd32_queue_depth,
    )
}

/// The report of everything in the metrics file, with the loads, the
/// machine and the command.
pub(super) fn write_run_report(
    config: &RunConfig,
    metrics: &[BlockMetrics],
    loads: &[LoadMarker],
    device: Option<&DeviceProbe>,
    notes: &[String],
) -> Result<WrittenReport, BenchError> {
    let machine = crate::measure::machine::MachineInfo::read();
    let mut setup = String::from("## Setup\n\n");
    setup.push_str(&format!("Command: `{}`\n\n", config.command));
    setup.push_str(&format!("Machine: {}\n\n", machine.summary()));
    if let Some(device) = device {
        setup.push_str(&device_line(device));
    }
    setup.push_str(&format!(
        "Runs: {} measured after 1 warm-up, each from a fresh copy of the loaded database {}; \
         {} blocks of {} gas per run for EVM workloads.\n\n",
        config.runs,
        if config.warm {
            "**with a warm page cache** (--warm)"
        } else {
            "with its files dropped from the page cache (0 bytes resident, checked with mincore)"
        },
        config.blocks,
        config.shape.gas()
    ));
    if !loads.is_empty() {
        setup.push_str("| loaded database | tree entries | load s | disk bytes | bytes/entry | root |\n|---|---|---|---|---|---|\n");
        for load in loads {
            setup.push_str(&format!(
                "| {} | {} | {:.1} | {} | {:.0} | `{}` |\n",
                load.configuration,
                load.entries,
                load.seconds,
                load.disk_bytes,
                load.disk_bytes as f64 / load.entries.max(1) as f64,
                load.root
            ));
        }
        setup.push('\n');
    }
    for text in notes {
        setup.push_str(&format!("Note: {text}\n\n"));
    }
    let options = ReportOptions {
        title: "ubt bench".into(),
        extra_sections: vec![setup],
        ..ReportOptions::default()
    };
    write_report(metrics, &config.out_dir, "report", &options)
}
