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
