//! [`Slave`]: a broker's slave (broker id 1, `brokerRole=SLAVE`, `slaveReadEnable=true`): a
//! node of its own, and what keeps it a copy of its master.
//!
//! - **Messages** (`HAService`, `ASYNC_MASTER`): the slave holds each record of its master's
//!   commit log from [`SimConfig::replication_lag`](super::SimConfig::replication_lag) after the
//!   master stored it, in commit-log order, byte for byte (same queue and commit-log offsets,
//!   same store host). Asynchronous, because that is the default (`brokerRole=ASYNC_MASTER`)
//!   and the case that matters to a consumer: a master lost right after storing a message
//!   keeps it to itself until it is back (a crashed process's data survives on its disk), and
//!   its slave serves everything before. Copying stops while
//!   either node is down and resumes where it stood (the slave's HA client reports its offset
//!   and the master streams from there). Copies wake none of the slave's parked pulls
//!   (`ReputMessageService` notifies arrivals only off a slave).
//! - **Offsets and topics** (`SlaveSynchronize.syncAll`, every 10 s, the first 3 s after
//!   start): while the master is up, its topic table and its consumer offsets replace the
//!   slave's (see [`SimBroker::sync_offsets`]). Between syncs the slave keeps its own table:
//!   commits sent to it while the master is down stay there until the master is back, and
//!   the next sync overwrites them with the master's, which never heard of them.
//! - **Its own node**: members (a heartbeat registers on the slave as on any broker), parked
//!   pulls, locks and committed offsets of its own, lost in its own crash; the simulator's
//!   injected faults (`Fault`), silence and black holes act on masters only.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::ConnKey;
use super::broker::SimBroker;
use super::env::Env;

/// `SlaveSynchronize`'s first run after start (`BrokerController.handleSlaveSynchronize`).
const FIRST_SYNC: Duration = Duration::from_secs(3);

/// A slave and its copy state. See the [module documentation](self).
#[derive(Debug)]
pub(crate) struct Slave {
    /// The slave's own node.
    pub(crate) node: SimBroker,
    /// The master's commit-log offset up to which the slave holds every record.
    copied_to: i64,
    /// When `SlaveSynchronize` runs next.
    next_sync: Instant,
}

impl Slave {
    /// A slave with nothing copied yet, its first sync due 3 s after `epoch`.
    pub(crate) fn new(node: SimBroker, epoch: Instant) -> Self {
        Self {
            node,
            copied_to: 0,
            next_sync: epoch + FIRST_SYNC,
        }
    }

    /// The slave's next timer: a record of `master` due to be copied, the next sync, or one
    /// of its own node's. None while the slave is down.
    pub(crate) fn next_timer(
        &self,
        master: &SimBroker,
        lag: Duration,
        channel_expired_timeout: Option<Duration>,
    ) -> Option<Instant> {
        if self.node.down {
            return None;
        }
        let copy = (!master.down)
            .then(|| master.store.records_from(self.copied_to).next())
            .flatten()
            .map(|record| record.stored_at + lag);
        [
            copy,
            Some(self.next_sync),
            self.node.next_timer(channel_expired_timeout),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Fires what is due at `env.now`: copies the records of `master` stored `lag` ago or
    /// earlier, syncs offsets and topics when due, then runs the node's own timers. Returns
    /// the connections to close (members that stopped heartbeating).
    pub(crate) fn fire(
        &mut self,
        env: &mut Env<'_>,
        master: &SimBroker,
        lag: Duration,
    ) -> BTreeSet<ConnKey> {
        if !master.down {
            for record in master.store.records_from(self.copied_to) {
                if record.stored_at + lag > env.now {
                    break;
                }
                self.node.store.append_copy(record);
                self.copied_to = record.commit_log_offset + 1;
            }
        }
        if self.next_sync <= env.now {
            // The sync of a master that is down fails and is tried again next period.
            if !master.down {
                self.node.store.sync_topics(&master.store);
                self.node.sync_offsets(&master.offsets);
            }
            self.next_sync = env.now + env.config.slave_sync_interval.max(Duration::from_millis(1));
        }
        self.node.fire(env)
    }
}
