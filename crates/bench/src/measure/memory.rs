//! The process's own memory, from `/proc/self/status`: the resident set
//! now (`VmRSS`) and its peak so far (`VmHWM`), for the benchmarks'
//! memory figures. `None` where the file or the field is missing (not
//! Linux).

/// Resident bytes now.
pub fn resident_bytes() -> Option<u64> {
    status_kib("VmRSS:").map(|kib| kib * 1024)
}

/// The most resident bytes so far (the high-water mark).
pub fn peak_resident_bytes() -> Option<u64> {
    status_kib("VmHWM:").map(|kib| kib * 1024)
}

/// The peak resident bytes, at least every sample in `samples`. The
/// kernel raises `VmHWM` lazily (when mappings shrink, not when an
/// allocator returns pages with `madvise`), so a resident set sampled
/// earlier can exceed the high-water mark read later.
pub fn peak_resident_bytes_with(samples: &[Option<u64>]) -> Option<u64> {
    let sampled = samples.iter().flatten().copied().max();
    match (peak_resident_bytes(), sampled) {
        (Some(peak), Some(sampled)) => Some(peak.max(sampled)),
        (peak, sampled) => peak.or(sampled),
    }
}

/// The `kB` value of a field of `/proc/self/status`.
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_kib(&status, field)
}

/// The value of `field` in `status` text, whose lines read
/// `Field:   1234 kB`.
fn parse_kib(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|line| line.starts_with(field))?;
    let mut words = line[field.len()..].split_whitespace();
    let value = words.next()?.parse().ok()?;
    (words.next() == Some("kB")).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_read_in_kib() {
        let status = "Name:\tubt\nVmHWM:\t  20480 kB\nVmRSS:\t   1024 kB\n";
        assert_eq!(parse_kib(status, "VmHWM:"), Some(20480));
        assert_eq!(parse_kib(status, "VmRSS:"), Some(1024));
        assert_eq!(parse_kib(status, "VmSwap:"), None);
        assert_eq!(parse_kib("VmRSS:\tmany kB\n", "VmRSS:"), None);
        assert_eq!(parse_kib("VmRSS:\t12 pages\n", "VmRSS:"), None);
    }

    #[test]
    fn this_process_has_a_resident_set_on_linux() {
        if cfg!(target_os = "linux") {
            let now = resident_bytes().expect("VmRSS on Linux");
            let peak = peak_resident_bytes().expect("VmHWM on Linux");
            assert!(now > 0 && peak >= now, "now {now}, peak {peak}");
        }
    }
}
