//! Simulated files (placeholder until the simulated disk lands).
