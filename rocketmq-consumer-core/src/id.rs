//! The consumer's internal names: which life of which owned queue a timer, request or
//! delivery belongs to. Their own module, below everything that carries them.

/// Names one life of an owned queue. Keys are never reused, so a key names one assignment:
/// a queue revoked and assigned again gets a new key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct QueueKey(pub(crate) u64);

/// A queue's position epoch: it changes with every restart of the queue's position (a new
/// life, a seek, a reset, a lost lease), so answers and completions of an older position are
/// recognised as stale.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Epoch(pub(crate) u64);
