//! Per-thread shards, for what every request writes (the `/metrics` counters, the connection
//! timer's lists): a value written by all cores moves its cache line from core to core on every
//! write, which on the 2-core benchmark machine cost as much as a cheap review's own work
//! (admission_load at 16 connections). Each thread writes its own shard; readers visit all.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Shards: more than the threads that write on a typical node. Threads beyond share shards,
/// which stays correct (every shard is safe to share) and only costs the sharing.
pub const SHARDS: usize = 16;

/// This thread's number: 0, 1, 2, … handed out in turn as threads first ask.
pub fn thread_number() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static NUMBER: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    NUMBER.with(|number| *number)
}

/// [`SHARDS`] values, each on cache lines of its own.
pub struct Sharded<T> {
    shards: Box<[Padded<T>]>,
}

/// 128 bytes: adjacent-line prefetching pairs 64-byte lines.
#[derive(Default)]
#[repr(align(128))]
struct Padded<T>(T);

impl<T: Default> Default for Sharded<T> {
    fn default() -> Self {
        Sharded {
            shards: (0..SHARDS).map(|_| Padded::default()).collect(),
        }
    }
}

impl<T> Sharded<T> {
    /// The number of this thread's shard, for finding it again from another thread.
    pub fn index(&self) -> usize {
        thread_number() % SHARDS
    }

    pub fn get(&self, index: usize) -> &T {
        &self.shards[index].0
    }

    /// This thread's shard.
    pub fn mine(&self) -> &T {
        self.get(self.index())
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.shards.iter().map(|padded| &padded.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_keeps_its_number_and_threads_get_different_ones() {
        let here = thread_number();
        assert_eq!(thread_number(), here);
        let others: Vec<usize> = (0..4)
            .map(|_| std::thread::spawn(thread_number).join().unwrap())
            .collect();
        let mut all = others.clone();
        all.push(here);
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 5, "numbers: {here} and {others:?}");
    }

    #[test]
    fn shards_do_not_share_cache_lines_and_a_thread_finds_its_own() {
        let sharded: Sharded<std::sync::atomic::AtomicU64> = Sharded::default();
        let addresses: Vec<usize> = sharded.iter().map(|s| s as *const _ as usize).collect();
        assert_eq!(addresses.len(), SHARDS);
        assert!(addresses.windows(2).all(|w| w[1] - w[0] >= 128));
        sharded.mine().fetch_add(1, Ordering::Relaxed);
        assert_eq!(sharded.get(sharded.index()).load(Ordering::Relaxed), 1);
        let total: u64 = sharded.iter().map(|s| s.load(Ordering::Relaxed)).sum();
        assert_eq!(total, 1);
    }
}
