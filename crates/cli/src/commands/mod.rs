//! One module per subcommand.

pub mod account;
pub mod bench_gen;
pub mod bench_overlay;
pub mod bench_proofs;
pub mod bench_report;
pub mod bench_run;
pub mod bench_store;
pub mod code;
pub mod export_bin;
pub mod get;
pub mod import;
pub mod key;
pub mod load;
pub mod prove;
pub mod root;
pub mod stats;
pub mod storage;
pub mod verify;
