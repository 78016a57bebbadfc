//! Quick timing smoke test (not a benchmark): build N, cold-ish reads, update blocks.
use alloy_primitives::B256;
use std::time::Instant;
use ubt_store::{Options, Store};

fn key(i: u64) -> B256 {
    B256::from(ubt_spec::hash::sha256(&i.to_le_bytes()))
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse().unwrap())
        .unwrap_or(1_000_000);
    let path = std::path::PathBuf::from(std::env::args().nth(2).unwrap_or("/work/smoke-db".into()));
    let blocks_only = std::env::args().nth(3).is_some();
    if blocks_only {
        let mut store = Store::open_path(&path, Options::default()).unwrap();
        let t = Instant::now();
        for round in 0..40u64 {
            let writes: Vec<(B256, B256)> = (0..4096u64)
                .map(|i| {
                    let j = (round * 4096 + i) * 2654435761 % n;
                    (key(j), key(j + 99))
                })
                .collect();
            store.apply(&writes).unwrap();
            store.commit().unwrap();
        }
        println!("40 blocks {:?}", t.elapsed());
        return;
    }
    let _ = std::fs::remove_dir_all(&path);
    let t = Instant::now();
    let mut entries: Vec<(B256, B256)> = (0..n).map(|i| (key(i), key(i + (1 << 40)))).collect();
    entries.sort_unstable();
    println!("gen+sort {:?}", t.elapsed());
    let t = Instant::now();
    let dir = std::sync::Arc::new(
        ubt_store::io::os::OsDir::open(&path, true, Default::default()).unwrap(),
    );
    let (store, report) = Store::build(dir, Options::default(), entries.iter().copied()).unwrap();
    let el = t.elapsed();
    println!(
        "build {:?} = {:.0} entries/s, {:?}",
        el,
        n as f64 / el.as_secs_f64(),
        report
    );
    let st = store.stats();
    println!(
        "bytes/entry {:.1} buckets {} depth mean {:.1} pages {} upper bytes {}",
        st.data_file_bytes as f64 / n as f64,
        st.bucket_count,
        st.bucket_depth_mean,
        st.page_count,
        st.upper_trie_bytes
    );
    drop(store);
    let _ = std::process::Command::new("sh")
        .arg("-c")
        .arg("sync; echo 3 > /proc/sys/vm/drop_caches")
        .status();
    let mut store = Store::open_path(&path, Options::default()).unwrap();
    let t = Instant::now();
    let mut lat = Vec::new();
    for i in 0..2000u64 {
        let t0 = Instant::now();
        let v = store.get(&key(i * 7919 % n)).unwrap();
        lat.push(t0.elapsed().as_micros());
        assert!(v.is_some());
    }
    lat.sort();
    println!(
        "cold get p50 {}us p99 {}us total {:?}",
        lat[1000],
        lat[1980],
        t.elapsed()
    );
    store.clear_cache();
    let _ = std::process::Command::new("sh")
        .arg("-c")
        .arg("sync; echo 3 > /proc/sys/vm/drop_caches")
        .status();
    let keys: Vec<B256> = (0..20000u64).map(|i| key((i * 104729 + 13) % n)).collect();
    let t = Instant::now();
    let got = store.get_many(&keys).unwrap();
    let el = t.elapsed();
    assert!(got.iter().all(|v| v.is_some()));
    println!(
        "get_many 20000 cold: {:?} = {:.0} reads/s",
        el,
        20000.0 / el.as_secs_f64()
    );
    for round in 0..6 {
        if round == 0 || round == 3 {
            store.clear_cache();
            let _ = std::process::Command::new("sh")
                .arg("-c")
                .arg("sync; echo 3 > /proc/sys/vm/drop_caches")
                .status();
        }
        let writes: Vec<(B256, B256)> = (0..4096u64)
            .map(|i| {
                let j = (round * 4096 + i) * 2654435761 % n;
                (key(j), key(j + 99))
            })
            .collect();
        let before = store.stats();
        let t = Instant::now();
        store.apply(&writes).unwrap();
        let ta = t.elapsed();
        store.commit().unwrap();
        let tc = t.elapsed() - ta;
        let after = store.stats();
        println!(
            "block {round}: apply {:?} commit {:?} reads {} wal {} B/slot",
            ta,
            tc,
            after.bucket_reads - before.bucket_reads,
            (after.wal_bytes_written - before.wal_bytes_written) / 4096
        );
    }
    let t = Instant::now();
    store.checkpoint().unwrap();
    println!(
        "checkpoint {:?} data written {}",
        t.elapsed(),
        store.stats().data_bytes_written
    );
}
