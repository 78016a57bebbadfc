//! Runs the store benchmark: `store_bench N DIR [--no-device]`; prints the
//! Markdown report and writes the JSON next to the database directory.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let entries: u64 = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let dir = std::path::PathBuf::from(
        args.get(2)
            .cloned()
            .unwrap_or_else(|| "/work/bench-tmp".into()),
    );
    let mut config = ubt_bench::store_bench::StoreBenchConfig::new(dir.clone(), entries);
    if args.iter().any(|a| a == "--no-device") {
        config.device = None;
    }
    let report =
        ubt_bench::store_bench::run(&config, &mut |line| eprintln!("[store bench] {line}"))
            .unwrap_or_else(|e| panic!("benchmark failed: {e}"));
    println!("{}", ubt_bench::store_bench::to_markdown(&report));
    let json = serde_json::to_string_pretty(&report).expect("json");
    std::fs::write(dir.join(format!("store-bench-{entries}.json")), json).expect("write json");
}
