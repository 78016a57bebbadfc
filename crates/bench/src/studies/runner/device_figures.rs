//! The device's figures of a run (`<out>/device.json`): measured at the
//! first start, read back by a resumed run.

use super::{RunConfig, RunEvent};
use crate::measure::device::DeviceLimits;
use crate::BenchError;

/// Where the run's device figures are kept, so a resumed run reports the
/// figures of its first start.
const DEVICE_FILE: &str = "device.json";

/// The device's limits: read back from a previous start of this run, or
/// measured now in the output directory (the probe's scratch file is
/// removed afterwards), or `None` when the configuration skips the probe.
pub(super) fn device_limits(
    config: &RunConfig,
    events: &mut dyn FnMut(RunEvent),
) -> Result<Option<DeviceProbe>, BenchError> {
    let path = config.out_dir.join(DEVICE_FILE);
    if let Ok(text) = std::fs::read_to_string(&path) {
        if let Ok(probe) = serde_json::from_str::<DeviceProbe>(&text) {
            return Ok(Some(probe));
        }
    }
    let Some(options) = &config.device_probe else {
        return Ok(None);
    };
    events(RunEvent::Phase {
        label: "probing the device (random 4 KiB reads at QD1 and QD32)".into(),
        total: 0,
    });
    let limits = crate::measure::device::probe(&config.out_dir, options);
    let _ = std::fs::remove_file(config.out_dir.join(crate::measure::device::PROBE_FILE_NAME));
    let probe = DeviceProbe {
        measured: crate::measure::machine::utc_now(),
        limits: limits?,
    };
    events(RunEvent::Done);
    let text = serde_json::to_string_pretty(&probe).map_err(|e| BenchError::InvalidOptions {
        what: format!("encoding the device figures: {e}"),
    })?;
    std::fs::write(&path, text).map_err(|e| BenchError::io_at("writing", &path, e))?;
    Ok(Some(probe))
}

/// The device's figures and when they were taken (`device.json`).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct DeviceProbe {
    /// When the probe ran (`YYYY-MM-DD HH:MM UTC`).
    pub(super) measured: String,
    /// What it measured.
    pub(super) limits: DeviceLimits,
}
