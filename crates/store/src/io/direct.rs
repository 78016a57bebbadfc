//! Reads that bypass the page cache: a second descriptor of a file opened
//! `O_DIRECT`, used for reads only ([`crate::Options::direct_reads`]).
//!
//! `O_DIRECT` needs the file offset, the length and the memory address of
//! every read aligned to the device's logical block; [`DIRECT_ALIGN`]
//! (4 KiB) covers every block size Linux file systems use. A request for
//! any `len` bytes at any `offset` is read as its [`Window`]: the aligned
//! range around it, into an aligned part of a heap buffer, and the
//! requested bytes are copied out. The last block of a file may be partial:
//! a short read that ends the file is fine as long as it covers the
//! request, and one that does not is `UnexpectedEof`, as for buffered
//! reads.
//!
//! Writes keep going through the buffered descriptor. Linux writes back
//! (and waits for) dirty page-cache pages of a range before a direct read
//! of it, so a direct read always sees the latest completed write.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

/// Alignment of offsets, lengths and buffers of direct reads, in bytes.
pub(crate) const DIRECT_ALIGN: usize = 4096;

/// The aligned range a direct read of `len` bytes at `offset` covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Window {
    /// First byte read: `offset` rounded down to [`DIRECT_ALIGN`].
    pub(super) start: u64,
    /// Bytes of the window before the requested ones.
    pub(super) skip: usize,
    /// Bytes the request asked for.
    pub(super) len: usize,
    /// Bytes read: `skip + len` rounded up to [`DIRECT_ALIGN`].
    pub(super) span: usize,
}

impl Window {
    /// The window of `len` bytes at `offset`; `InvalidInput` if the range
    /// overflows the offset space.
    pub(super) fn of(offset: u64, len: usize) -> io::Result<Window> {
        let overflow = || {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "read range overflows the file offset",
            )
        };
        let align = DIRECT_ALIGN as u64;
        let start = offset - offset % align;
        #[allow(clippy::cast_possible_truncation)] // below DIRECT_ALIGN
        let skip = (offset - start) as usize;
        let end = offset.checked_add(len as u64).ok_or_else(overflow)?;
        let end_aligned = end
            .div_ceil(align)
            .checked_mul(align)
            .ok_or_else(overflow)?;
        let span = usize::try_from(end_aligned - start).map_err(|_| overflow())?;
        Ok(Window {
            start,
            skip,
            len,
            span,
        })
    }

    /// Bytes that must have been read for the request to be answered.
    pub(super) fn needed(&self) -> usize {
        self.skip + self.len
    }

    /// Whether a read that has filled `filled` bytes may continue: false
    /// after a short read that ended the file before the request's end
    /// (a direct read can only continue at an aligned position).
    pub(super) fn can_continue(&self, filled: usize) -> bool {
        filled >= self.needed() || filled.is_multiple_of(DIRECT_ALIGN)
    }
}

/// A heap buffer with an aligned region of `span` bytes.
#[derive(Debug)]
pub(super) struct AlignedBuf {
    bytes: Vec<u8>,
    at: usize,
    span: usize,
}

impl AlignedBuf {
    /// A zeroed buffer whose region of `span` bytes starts at an address
    /// that is a multiple of [`DIRECT_ALIGN`].
    pub(super) fn zeroed(span: usize) -> AlignedBuf {
        let bytes = vec![0u8; span + DIRECT_ALIGN];
        let at = bytes.as_ptr().align_offset(DIRECT_ALIGN);
        debug_assert!(at < DIRECT_ALIGN);
        AlignedBuf { bytes, at, span }
    }

    /// The aligned region.
    pub(super) fn region_mut(&mut self) -> &mut [u8] {
        &mut self.bytes[self.at..self.at + self.span]
    }

    /// The requested bytes of `window`, copied out of the region.
    pub(super) fn take(&self, window: &Window) -> Vec<u8> {
        self.requested(window).to_vec()
    }

    /// The requested bytes of `window`, read into the region's start.
    pub(super) fn requested(&self, window: &Window) -> &[u8] {
        let from = self.at + window.skip;
        &self.bytes[from..from + window.len]
    }
}

/// End of file before the requested range's end.
pub(super) fn eof() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "read past the end of the file",
    )
}

/// Reads `len` bytes at `offset` through `direct` (opened `O_DIRECT`).
pub(super) fn read_exact(direct: &File, offset: u64, len: usize) -> io::Result<Vec<u8>> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let window = Window::of(offset, len)?;
    let mut buf = AlignedBuf::zeroed(window.span);
    fill(direct, &mut buf, &window)?;
    Ok(buf.take(&window))
}

thread_local! {
    /// The aligned buffer a thread's single direct reads land in.
    static ALIGNED: std::cell::RefCell<Option<AlignedBuf>> = const { std::cell::RefCell::new(None) };
}

/// [`read_exact`] into the thread's aligned buffer (kept while its region
/// is at most [`super::scratch::KEPT_BYTES_MAX`]), copied once into the
/// shared buffer returned.
pub(super) fn read_shared(direct: &File, offset: u64, len: usize) -> io::Result<Arc<[u8]>> {
    with_read(direct, offset, len, |bytes| Arc::from(bytes))
}

/// Reads `buf.len()` bytes at `offset` through `direct` into `buf`, by
/// way of the thread's aligned buffer as [`read_shared`] does.
pub(super) fn read_into(direct: &File, offset: u64, buf: &mut [u8]) -> io::Result<()> {
    let len = buf.len();
    with_read(direct, offset, len, |bytes| buf.copy_from_slice(bytes))
}

/// Reads `len` bytes at `offset` into the thread's aligned buffer and
/// hands them to `f` (an empty, oversized or reentrant read uses a buffer
/// of its own).
fn with_read<R>(
    direct: &File,
    offset: u64,
    len: usize,
    f: impl FnOnce(&[u8]) -> R,
) -> io::Result<R> {
    let window = Window::of(offset, len)?;
    if len == 0 || window.span > super::scratch::KEPT_BYTES_MAX {
        return read_exact(direct, offset, len).map(|bytes| f(&bytes));
    }
    ALIGNED.with(|cell| {
        let Ok(mut kept) = cell.try_borrow_mut() else {
            return read_exact(direct, offset, len).map(|bytes| f(&bytes));
        };
        if kept.as_ref().is_none_or(|buf| buf.span < window.span) {
            *kept = Some(AlignedBuf::zeroed(window.span));
        }
        let buf = kept.as_mut().unwrap_or_else(|| unreachable!("set above"));
        fill(direct, buf, &window)?;
        Ok(f(buf.requested(&window)))
    })
}

/// Reads `window` into the start of `buf`'s aligned region.
fn fill(direct: &File, buf: &mut AlignedBuf, window: &Window) -> io::Result<()> {
    debug_assert!(buf.span >= window.span);
    let mut filled = 0usize;
    while filled < window.needed() {
        // Only the window: a kept buffer's region may be larger.
        let region = &mut buf.region_mut()[..window.span];
        match direct.read_at(&mut region[filled..], window.start + filled as u64) {
            Ok(0) => return Err(eof()),
            Ok(read) => {
                filled += read;
                if !window.can_continue(filled) {
                    return Err(eof());
                }
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::fs::OpenOptions;
    use std::os::unix::fs::OpenOptionsExt;
    use std::path::Path;

    /// `path` opened `O_DIRECT` for reading, or `None` where the file
    /// system refuses it (tmpfs, for one).
    pub(in crate::io) fn open_direct(path: &Path) -> Option<File> {
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
            .ok()?;
        read_exact(&file, 0, 1).ok().map(|_| file)
    }

    #[test]
    fn direct_reads_equal_buffered_reads_at_any_offset() {
        let path = std::env::temp_dir().join(format!("ubt-direct-unit-{}", std::process::id()));
        #[allow(clippy::cast_possible_truncation)] // test data
        let content: Vec<u8> = (0..20_000u32).map(|i| (i * 13 + i / 509) as u8).collect();
        std::fs::write(&path, &content).unwrap();
        let Some(file) = open_direct(&path) else {
            eprintln!("skipping: the temporary directory refuses O_DIRECT");
            std::fs::remove_file(&path).unwrap();
            return;
        };
        for (offset, len) in [
            (0usize, 1usize),
            (0, 4096),
            (1, 4096),
            (4095, 2),
            (8192, 4096),
            (5000, 12_000),
            (19_999, 1),
            (16_384, 3616),
        ] {
            assert_eq!(
                read_exact(&file, offset as u64, len).unwrap(),
                &content[offset..offset + len],
                "{offset} +{len}"
            );
        }
        for (offset, len) in [(19_999u64, 2usize), (20_000, 1), (40_000, 10)] {
            let error = read_exact(&file, offset, len).unwrap_err();
            assert_eq!(
                error.kind(),
                io::ErrorKind::UnexpectedEof,
                "{offset} +{len}"
            );
        }
        assert!(read_exact(&file, 7, 0).unwrap().is_empty());
        // Through the thread's kept buffer: a large window first, so the
        // smaller ones after it reuse a larger region (and must read only
        // their own window: the last block ends the file).
        for (offset, len) in [
            (0usize, 20_000usize),
            (19_999, 1),
            (16_384, 3616),
            (1, 4096),
            (5000, 12_000),
            (4095, 2),
        ] {
            let wanted = &content[offset..offset + len];
            let shared = read_shared(&file, offset as u64, len).unwrap();
            assert_eq!(&*shared, wanted, "shared {offset} +{len}");
            let mut buf = vec![0u8; len];
            read_into(&file, offset as u64, &mut buf).unwrap();
            assert_eq!(buf, wanted, "into {offset} +{len}");
        }
        for (offset, len) in [(19_999u64, 2usize), (40_000, 10)] {
            let error = read_shared(&file, offset, len).unwrap_err();
            assert_eq!(
                error.kind(),
                io::ErrorKind::UnexpectedEof,
                "shared {offset} +{len}"
            );
            let error = read_into(&file, offset, &mut vec![0u8; len]).unwrap_err();
            assert_eq!(
                error.kind(),
                io::ErrorKind::UnexpectedEof,
                "into {offset} +{len}"
            );
        }
        assert!(read_shared(&file, 7, 0).unwrap().is_empty());
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn windows_cover_the_request_aligned() {
        let cases = [
            (0u64, 4096usize, 0u64, 0usize, 4096usize),
            (4096, 100, 4096, 0, 4096),
            (4100, 4096, 4096, 4, 8192),
            (8191, 2, 4096, 4095, 8192),
            (12_288, 1, 12_288, 0, 4096),
        ];
        for (offset, len, start, skip, span) in cases {
            let window = Window::of(offset, len).unwrap();
            assert_eq!(
                window,
                Window {
                    start,
                    skip,
                    len,
                    span
                },
                "{offset} +{len}"
            );
            assert_eq!(window.start % DIRECT_ALIGN as u64, 0);
            assert_eq!(window.span % DIRECT_ALIGN, 0);
            assert!(window.start + window.span as u64 >= offset + len as u64);
        }
        assert!(Window::of(u64::MAX - 10, 100).is_err());
    }

    #[test]
    fn a_short_read_continues_only_at_an_aligned_position() {
        let window = Window::of(100, 5000).unwrap();
        assert!(window.can_continue(4096));
        assert!(!window.can_continue(4000));
        assert!(window.can_continue(5100));
    }

    #[test]
    fn aligned_regions_are_aligned() {
        for span in [4096, 8192, 65_536] {
            let mut buf = AlignedBuf::zeroed(span);
            let region = buf.region_mut();
            assert_eq!(region.len(), span);
            assert_eq!(region.as_ptr().align_offset(DIRECT_ALIGN), 0);
        }
    }
}
