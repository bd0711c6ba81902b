//! Seeded input generation for the bounded fuzz runs in `cargo test`: a few thousand inputs per
//! target, mutated from real seeds with the edits libFuzzer's mutators make most often (insert a
//! token of the language, delete, duplicate, replace, truncate, damage a byte) plus deep nesting,
//! where recursion limits are. Deterministic for a seed, so a failure reproduces.

/// xorshift64*: small, seeded, good enough to pick edits.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The seed and iteration count of a bounded run: `FUZZ_SEED` and `FUZZ_ITERATIONS` widen a
/// local run.
pub fn settings(default_seed: u64, default_iterations: usize) -> (u64, usize) {
    let seed = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_seed);
    let iterations = std::env::var("FUZZ_ITERATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_iterations);
    (seed, iterations)
}

/// `seed` after one to four edits; `tokens` are the language's words and punctuation.
pub fn mutate(rng: &mut Rng, seed: &[u8], tokens: &[&str]) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        edit(rng, &mut bytes, tokens);
    }
    bytes
}

fn edit(rng: &mut Rng, bytes: &mut Vec<u8>, tokens: &[&str]) {
    let at = boundary(bytes, rng.below(bytes.len() + 1));
    match rng.below(10) {
        0..=2 if !tokens.is_empty() => {
            let token = rng.pick(tokens).as_bytes().to_vec();
            bytes.splice(at..at, token);
        }
        3 | 4 => {
            let end = boundary(bytes, (at + 1 + rng.below(12)).min(bytes.len()));
            bytes.drain(at..end);
        }
        5 => {
            let end = boundary(bytes, (at + 1 + rng.below(40)).min(bytes.len()));
            let copy = bytes[at..end].to_vec();
            let to = boundary(bytes, rng.below(bytes.len() + 1));
            bytes.splice(to..to, copy);
        }
        6 => {
            let end = boundary(bytes, (at + 1).min(bytes.len()));
            let by = *rng.pick(b"()[]{}.,:;'\"`\\#-=~<>!?*/ \n\t0123456789aZ_@$%");
            bytes.splice(at..end, [by]);
        }
        7 => bytes.truncate(at),
        8 => {
            // Deep nesting around a piece, up to past the recursion limits.
            let (open, close) = *rng.pick(&[("(", ")"), ("[", "]"), ("{", "}"), ("-", "")]);
            let most = if rng.chance(20) { 400 } else { 40 };
            let depth = 1 + rng.below(most);
            let mut nested = open.repeat(depth).into_bytes();
            nested.extend_from_slice(&bytes[at..]);
            nested.extend(close.repeat(depth).bytes());
            bytes.truncate(at);
            bytes.extend(nested);
        }
        _ => {
            // A byte that may not be UTF-8.
            if !bytes.is_empty() {
                let i = rng.below(bytes.len());
                bytes[i] = rng.next_u64() as u8;
            }
        }
    }
}

/// `at`, moved back to the start of a UTF-8 sequence (edits keep valid text valid, except the
/// byte damage meant to break it).
fn boundary(bytes: &[u8], mut at: usize) -> usize {
    while at > 0 && at < bytes.len() && (bytes[at] & 0xC0) == 0x80 {
        at -= 1;
    }
    at
}
