//! Reading line-oriented files with a bound on a line's length, so that a
//! file without newlines (say `/dev/zero` given as a metrics file) is an
//! error naming its line instead of memory growing until the process dies.

use std::io::{self, BufRead, Read};

/// The lines of `reader` (without their `\n` or `\r\n`), each at most
/// `line_bytes_max` bytes: a longer line is an `InvalidData` error (and no
/// more than about the bound is ever buffered for it), as is a line that
/// is not UTF-8.
pub fn bounded_lines<R: BufRead>(
    mut reader: R,
    line_bytes_max: usize,
) -> impl Iterator<Item = io::Result<String>> {
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let mut line = Vec::new();
        let limit = line_bytes_max as u64 + 2;
        match (&mut reader).take(limit).read_until(b'\n', &mut line) {
            Err(error) => {
                done = true;
                Some(Err(error))
            }
            Ok(0) => None,
            Ok(_) => {
                if line.last() == Some(&b'\n') {
                    line.pop();
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                }
                if line.len() > line_bytes_max {
                    done = true;
                    return Some(Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("line is longer than {line_bytes_max} bytes"),
                    )));
                }
                Some(String::from_utf8(line).map_err(|_| {
                    io::Error::new(io::ErrorKind::InvalidData, "line is not UTF-8 text")
                }))
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_within_the_bound_and_the_first_too_long_one() {
        let text = b"ab\r\ncd\n\nxxxxxxxxxx\nnever";
        let lines: Vec<io::Result<String>> = bounded_lines(&text[..], 4).collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0].as_ref().unwrap(), "ab");
        assert_eq!(lines[1].as_ref().unwrap(), "cd");
        assert_eq!(lines[2].as_ref().unwrap(), "");
        assert_eq!(
            lines[3].as_ref().unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        // An endless line stops at the bound.
        let zeros = io::repeat(0).take(1 << 30);
        let mut lines = bounded_lines(io::BufReader::new(zeros), 1000);
        assert!(lines.next().unwrap().is_err());
        assert!(lines.next().is_none());
        assert!(bounded_lines(&b"\xff\n"[..], 10).next().unwrap().is_err());
    }
}
