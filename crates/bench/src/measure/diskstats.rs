//! Bytes the block device under a path wrote, from `/proc/diskstats`, so a
//! benchmark can report device-level writes beside the store's own count
//! (the page cache, the filesystem journal and other processes included).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The `/proc/diskstats` row of the device holding a path.
#[derive(Clone, Debug)]
pub struct DeviceCounters {
    major: u64,
    minor: u64,
}

impl DeviceCounters {
    /// The device of `path`'s filesystem; `None` if it cannot be found
    /// (not Linux, or a virtual filesystem).
    pub fn for_path(path: &Path) -> Option<DeviceCounters> {
        let dev = std::fs::metadata(path).ok()?.dev();
        let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
        let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
        let counters = DeviceCounters { major, minor };
        counters.sectors_written().map(|_| counters)
    }

    /// 512-byte sectors written since boot.
    pub fn sectors_written(&self) -> Option<u64> {
        let text = std::fs::read_to_string("/proc/diskstats").ok()?;
        text.lines().find_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let major: u64 = fields.first()?.parse().ok()?;
            let minor: u64 = fields.get(1)?.parse().ok()?;
            (major == self.major && minor == self.minor)
                .then(|| fields.get(9)?.parse().ok())
                .flatten()
        })
    }
}
