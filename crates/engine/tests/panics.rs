//! A panic inside an operation (here: inside a batched read during an
//! apply, on the thread pool) used to leave the handle serving reads from
//! a half-changed state, because the engine ignored the lock's poisoning.
//! Now the handle refuses reads and writes until reopened, and a reopen
//! finds the last durable state.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use alloy_primitives::B256;
use ubt_engine::{Db, DirLock, Error, Options, ReadRequest, StoreDir, StoreFile};
use ubt_spec::rng::SplitMix64;
use ubt_store::io::sim::SimDir;

/// A directory whose files panic in batched reads while `armed`.
#[derive(Debug)]
struct PanickyDir {
    inner: SimDir,
    armed: Arc<AtomicBool>,
}

#[derive(Debug)]
struct PanickyFile {
    inner: Arc<dyn StoreFile>,
    armed: Arc<AtomicBool>,
}

impl StoreFile for PanickyFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.inner.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.inner.write_all_at(buf, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.inner.sync_data()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn read_batch_each(
        &self,
        requests: &[ReadRequest],
        done: &mut dyn FnMut(usize, io::Result<Vec<u8>>),
    ) {
        assert!(
            !self.armed.load(Ordering::SeqCst),
            "injected panic in a batched read"
        );
        self.inner.read_batch_each(requests, done)
    }
}

impl StoreDir for PanickyDir {
    fn open_file(&self, name: &str, create: bool) -> io::Result<Arc<dyn StoreFile>> {
        Ok(Arc::new(PanickyFile {
            inner: self.inner.open_file(name, create)?,
            armed: Arc::clone(&self.armed),
        }))
    }
    fn open_file_read_only(&self, name: &str) -> io::Result<Arc<dyn StoreFile>> {
        self.inner.open_file_read_only(name)
    }
    fn exists(&self, name: &str) -> io::Result<bool> {
        self.inner.exists(name)
    }
    fn list(&self) -> io::Result<Vec<String>> {
        self.inner.list()
    }
    fn sync_dir(&self) -> io::Result<()> {
        self.inner.sync_dir()
    }
    fn lock_exclusive(&self) -> io::Result<Box<dyn DirLock>> {
        self.inner.lock_exclusive()
    }
    fn lock_shared(&self) -> io::Result<Box<dyn DirLock>> {
        self.inner.lock_shared()
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
}

fn key(i: u64) -> B256 {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&i.wrapping_mul(SplitMix64::GAMMA).to_be_bytes());
    bytes[31] = i as u8;
    B256::from(bytes)
}

#[test]
fn a_panic_inside_an_apply_poisons_the_handle_for_reads_and_writes() {
    let sim = SimDir::new();
    let armed = Arc::new(AtomicBool::new(false));
    let dir = Arc::new(PanickyDir {
        inner: sim.clone(),
        armed: Arc::clone(&armed),
    });
    let options = Options {
        memory_budget_bytes: 1 << 20,
        ..Options::default()
    };
    let mut db = Db::open_dir(dir, options.clone()).expect("open");
    let writes: Vec<(B256, B256)> = (0..5000).map(|i| (key(i), B256::repeat_byte(1))).collect();
    db.apply(&writes).expect("apply");
    db.checkpoint().expect("checkpoint");
    let durable = db.root();
    db.clear_cache();
    armed.store(true, Ordering::SeqCst);
    let more: Vec<(B256, B256)> = (0..5000).map(|i| (key(i), B256::repeat_byte(2))).collect();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| db.apply(&more)));
    assert!(panicked.is_err(), "the injected panic did not happen");
    armed.store(false, Ordering::SeqCst);
    assert!(matches!(db.get(&key(1)), Err(Error::Poisoned(_))));
    assert!(matches!(db.apply(&more), Err(Error::Poisoned(_))));
    assert_eq!(db.root(), durable);
    drop(db);
    let db = Db::open_dir(Arc::new(sim), options).expect("reopen");
    assert_eq!(db.root(), durable);
    assert_eq!(db.get(&key(1)).unwrap(), Some(B256::repeat_byte(1)));
}
