//! Real files (placeholder until the OS backend lands).
