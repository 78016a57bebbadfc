//! Facts about the machine a benchmark ran on, recorded with its figures.

use serde::Serialize;

/// The machine.
#[derive(Clone, Debug, Serialize)]
pub struct MachineInfo {
    /// CPU model name.
    pub cpu: String,
    /// Logical CPUs available to the process.
    pub cpus: usize,
    /// Physical memory in bytes.
    pub memory_bytes: u64,
    /// Kernel release.
    pub kernel: String,
}

impl MachineInfo {
    /// Reads `/proc` (fields left empty where unavailable).
    pub fn read() -> MachineInfo {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .and_then(|l| l.split(':').nth(1))
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_bytes = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|kb| kb.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024);
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .to_string();
        MachineInfo {
            cpu,
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_bytes,
            kernel,
        }
    }

    /// One line for reports.
    pub fn summary(&self) -> String {
        format!(
            "{} x {}, {:.0} GiB RAM, Linux {}",
            self.cpus,
            if self.cpu.is_empty() {
                "CPU"
            } else {
                &self.cpu
            },
            self.memory_bytes as f64 / (1u64 << 30) as f64,
            self.kernel
        )
    }
}

/// The current time as `YYYY-MM-DD HH:MM UTC`, for reports.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc_from_unix(secs)
}

/// `secs` since the Unix epoch as `YYYY-MM-DD HH:MM UTC` (proleptic
/// Gregorian calendar).
pub fn utc_from_unix(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let (hour, minute) = ((secs % 86_400) / 3_600, (secs % 3_600) / 60);
    // Civil date from days since 1970-01-01 (era-based conversion).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02} UTC")
}

#[cfg(test)]
mod utc_tests {
    use super::utc_from_unix;

    #[test]
    fn known_instants() {
        assert_eq!(utc_from_unix(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_from_unix(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc_from_unix(1_795_400_000), "2026-11-23 02:13 UTC");
    }
}
