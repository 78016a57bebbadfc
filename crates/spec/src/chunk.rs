//! Code chunking (spec 3.6): 31 code bytes per 32-byte chunk, byte 0 counts
//! the leading bytes that are push data of an instruction from an earlier
//! chunk (capped at 31).

/// Code bytes per chunk.
pub const CHUNK_CODE_BYTES: usize = 31;

const PUSH1: u8 = 0x60;
const PUSH32: u8 = 0x7f;

/// Splits `code` into 32-byte chunks; `ceil(len / 31)` chunks, none for empty
/// code. Push data running past the end of the code is truncated.
pub fn chunkify_code(code: &[u8]) -> Vec<[u8; 32]> {
    let chunk_count = code.len().div_ceil(CHUNK_CODE_BYTES);
    let mut chunks = vec![[0u8; 32]; chunk_count];
    // Offset just past the push data of the last PUSH seen.
    let mut push_data_end = 0usize;
    let mut pc = 0usize;
    for (index, chunk) in chunks.iter_mut().enumerate() {
        let start = index * CHUNK_CODE_BYTES;
        let end = (start + CHUNK_CODE_BYTES).min(code.len());
        chunk[1..1 + end - start].copy_from_slice(&code[start..end]);
        #[allow(clippy::cast_possible_truncation)] // at most CHUNK_CODE_BYTES (31)
        let push_data_in_chunk = push_data_end.saturating_sub(start).min(CHUNK_CODE_BYTES) as u8;
        chunk[0] = push_data_in_chunk;
        // Advance the opcode scan through this chunk.
        while pc < end {
            let op = code[pc];
            pc += 1;
            if (PUSH1..=PUSH32).contains(&op) {
                pc += usize::from(op - PUSH1) + 1;
                push_data_end = pc;
            }
        }
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push32_spanning_a_whole_chunk() {
        // PUSH32 at offset 30: chunk 1 is all push data (31), chunk 2 has 1.
        let mut code = vec![0u8; 30];
        code.push(PUSH32);
        code.extend([0xaa; 32]);
        code.push(0x00);
        let chunks = chunkify_code(&code);
        assert_eq!(chunks.len(), 3);
        assert_eq!([chunks[0][0], chunks[1][0], chunks[2][0]], [0, 31, 1]);
    }
}
