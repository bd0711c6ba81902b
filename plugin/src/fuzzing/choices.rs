//! Bytes read as a sequence of choices, for generators that build structured input from what a
//! fuzzer mutates: each byte picks among alternatives, so a mutated byte changes one decision
//! and the rest of the input keeps its meaning. Past the end every choice reads 0, so any prefix
//! of an input is an input too, and a generator should list its most ordinary alternative first.

/// The choices left in an input.
pub struct Choices<'a> {
    bytes: &'a [u8],
}

impl<'a> Choices<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Choices { bytes }
    }

    /// The next byte, 0 once the input is used up.
    pub fn byte(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((&b, rest)) => {
                self.bytes = rest;
                b
            }
            None => 0,
        }
    }

    /// A number below `n` (0 when `n` is 0 or 1); one byte, or two when `n` needs them.
    pub fn below(&mut self, n: usize) -> usize {
        match n {
            0 | 1 => 0,
            2..=256 => usize::from(self.byte()) % n,
            _ => usize::from(u16::from_le_bytes([self.byte(), self.byte()])) % n,
        }
    }

    /// Yes for roughly `percent` of the byte values; a used-up input says yes, so the ordinary
    /// case of a decision should be its "yes".
    pub fn chance(&mut self, percent: u8) -> bool {
        u32::from(self.byte()) * 100 < u32::from(percent) * 256
    }

    /// Yes for roughly `percent` of the byte values; a used-up input says no: for the unusual
    /// case of a decision.
    pub fn rarely(&mut self, percent: u8) -> bool {
        u32::from(self.byte()) * 100 >= u32::from(100u8.saturating_sub(percent)) * 256
    }

    pub fn pick<'i, T>(&mut self, items: &'i [T]) -> &'i T {
        &items[self.below(items.len())]
    }

    /// Up to `max` bytes taken as text (invalid UTF-8 replaced), its length chosen first.
    pub fn text(&mut self, max: usize) -> String {
        let len = self.below(max + 1).min(self.bytes.len());
        let (taken, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        String::from_utf8_lossy(taken).into_owned()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::Choices;

    #[test]
    fn choices_read_bytes_then_zeros() {
        let mut c = Choices::new(&[7, 200, 3, b'a', b'b', 0xff]);
        assert_eq!(c.below(5), 2);
        assert!(!c.chance(50), "200 is above half of the byte range");
        assert_eq!(c.text(10), "ab\u{fffd}");
        assert!(c.is_empty());
        assert_eq!(c.byte(), 0);
        assert!(c.chance(1), "a used-up input says yes");
        assert!(!c.chance(0));
        assert!(!c.rarely(99), "nor to an unusual case");
        assert_eq!(*c.pick(&["first", "second"]), "first");
        assert_eq!(c.text(10), "");
        let mut rare = Choices::new(&[255, 128, 0]);
        assert!(rare.rarely(1));
        assert!(rare.rarely(50) && !rare.rarely(50));
        let mut wide = Choices::new(&[0x01, 0x0a]);
        assert_eq!(wide.below(1000), 0x0a01 % 1000, "two bytes, little-endian");
    }
}
