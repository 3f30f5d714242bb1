//! The consumer core alone, as the criterion bench `core` runs it (16 queues, pull answers of
//! 32 messages of 128 B, every delivery completed, the next pulls built), as a plain program
//! whose cost can be counted in instructions: on a shared machine the criterion bench's times
//! wander by a fifth between runs, while an instruction count under `valgrind` does not.
//!
//! `core_steady [as-driver|on-demand|batched] [ROUNDS]` runs `ROUNDS` (default 160, rounded
//! up to a multiple of 16) rounds of 512 messages, each drained as the driver's task does with
//! quick handlers (`as-driver`, the default: each delivery completed as it is taken, 20 in
//! flight), the same with the deliveries handed out on demand and settled as they are handed
//! out (`on-demand`, `Consumer::deliver_now`), or all taken first and then all completed
//! (`batched`), and prints the wall time per message. To count the rounds' instructions alone, leave the setup (encoding the answers,
//! bringing each consumer to pulling) out with callgrind:
//!
//! ```sh
//! valgrind --tool=callgrind --toggle-collect='*answer_each*' target/release/core_steady as-driver 32
//! ```
//!
//! (`Collected` divided by 32 × 512 messages is the core's instructions per message, the same at
//! every run; build with `--profile bench` for `callgrind_annotate`'s source lines).

use std::time::{Duration, Instant};

use rocketmq_benches::{
    CORE_NAMESRV, CORE_PULL_BATCH, CORE_QUEUES, SteadyConsumer, core_pull_rounds,
};
use rocketmq_consumer_core::ConsumerConfig;

/// Rounds of answers encoded up front; a fresh consumer starts every this many rounds, as
/// offsets must advance.
const ROUNDS_PER_CONSUMER: usize = 16;
/// Body bytes per message.
const BODY_LEN: usize = 128;

/// How a round's deliveries are taken and completed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Drain {
    AsDriver,
    OnDemand,
    Batched,
}

fn main() {
    let mut args = std::env::args().skip(1);
    let drain = match args.next().as_deref() {
        None | Some("as-driver") => Drain::AsDriver,
        Some("on-demand") => Drain::OnDemand,
        Some("batched") => Drain::Batched,
        Some(other) => {
            eprintln!("usage: core_steady [as-driver|on-demand|batched] [ROUNDS] (not {other:?})");
            std::process::exit(2);
        }
    };
    let rounds: usize = match args.next().map(|n| n.parse()) {
        None => 160,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("ROUNDS must be a number: {e}");
            std::process::exit(2);
        }
    };
    let consumers = rounds.div_ceil(ROUNDS_PER_CONSUMER).max(1);
    let answers = core_pull_rounds(ROUNDS_PER_CONSUMER, BODY_LEN);
    let per_round = CORE_QUEUES as usize * CORE_PULL_BATCH;
    let mut timed = Duration::ZERO;
    let mut delivered = 0;
    for _ in 0..consumers {
        let mut config = ConsumerConfig::new("bench-group", vec![CORE_NAMESRV.to_owned()]);
        if drain == Drain::Batched {
            // Enough that the in-flight limit never holds a delivery back.
            config.max_in_flight_deliveries = 1024;
        }
        let mut steady = SteadyConsumer::new(config);
        if drain == Drain::OnDemand {
            steady.consumer.deliver_on_demand();
        }
        let start = Instant::now();
        for round in &answers {
            let round = std::hint::black_box(round);
            let messages = match drain {
                Drain::AsDriver => steady.round_as_driver(round),
                Drain::OnDemand => steady.round_on_demand(round),
                Drain::Batched => steady.round(round),
            };
            assert_eq!(messages, per_round, "every message of the round delivered");
            delivered += messages;
        }
        timed += start.elapsed();
    }
    println!(
        "{delivered} messages, {:.1} ns a message",
        timed.as_nanos() as f64 / delivered as f64
    );
}
