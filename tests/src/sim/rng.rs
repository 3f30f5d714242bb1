//! [`SimRng`]: the simulator's only source of randomness.
//!
//! xoshiro256** seeded through splitmix64, both as published by Blackman and Vigna
//! (<https://prng.di.unimi.it/>). Small, fast, and the same sequence on every platform, so a
//! `SIM_SEED` replays a run exactly.

/// A seeded xoshiro256** generator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimRng {
    state: [u64; 4],
}

/// One step of splitmix64: advances `state` and returns the next output. Also a good way to
/// derive independent seeds from one.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl SimRng {
    /// A generator whose whole sequence is determined by `seed`.
    pub fn new(seed: u64) -> Self {
        let mut sm = seed;
        let mut state = [0; 4];
        for word in &mut state {
            *word = splitmix64(&mut sm);
        }
        // xoshiro must not start from all zeros; splitmix64 never yields four zeros in a row,
        // but keep the generator total anyway.
        if state == [0; 4] {
            state[0] = 1;
        }
        Self { state }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.state;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// A uniform value in `0..n` (0 when `n` is 0), by Lemire's multiply-shift (the tiny bias
    /// for huge `n` does not matter here).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A uniform index into a slice of length `len` (0 when `len` is 0).
    pub fn index(&mut self, len: usize) -> usize {
        // usize fits in u64 on every supported target, and the result is below `len`.
        self.below(len as u64) as usize
    }

    /// True with probability `numerator / denominator` (false when `denominator` is 0).
    pub fn chance(&mut self, numerator: u64, denominator: u64) -> bool {
        denominator != 0 && self.below(denominator) < numerator
    }

    /// Shuffles `items` in place (Fisher-Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.index(i + 1);
            items.swap(i, j);
        }
    }

    /// An independent generator derived from this one, for a component that should not
    /// perturb this sequence when it draws more or fewer numbers.
    pub fn fork(&mut self) -> Self {
        Self::new(self.next_u64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_the_reference() {
        // First outputs of the reference splitmix64.c seeded with 0.
        let mut state = 0;
        assert_eq!(splitmix64(&mut state), 0xE220_A839_7B1D_CDAF);
        assert_eq!(splitmix64(&mut state), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn same_seed_same_sequence() {
        let mut a = SimRng::new(7);
        let mut b = SimRng::new(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(SimRng::new(8).next_u64(), SimRng::new(7).next_u64());
    }

    #[test]
    fn below_stays_in_range() {
        let mut rng = SimRng::new(1);
        assert_eq!(rng.below(0), 0);
        for n in 1..50 {
            assert!(rng.below(n) < n);
        }
        let mut items: Vec<u32> = (0..10).collect();
        rng.shuffle(&mut items);
        items.sort_unstable();
        assert_eq!(items, (0..10).collect::<Vec<_>>());
    }
}
