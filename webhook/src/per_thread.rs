//! A small number per thread, for spreading what every request writes over per-thread shards
//! (the `/metrics` counters, the connection timer's lists) so that two cores rarely write the
//! same cache line.

use std::sync::atomic::{AtomicUsize, Ordering};

/// This thread's number: 0, 1, 2, … handed out in turn as threads first ask. Callers reduce it
/// modulo their shard count; threads beyond that count share shards, which stays correct
/// (every shard is safe to share) and only costs the sharing.
pub fn thread_number() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static NUMBER: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    NUMBER.with(|number| *number)
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
}
