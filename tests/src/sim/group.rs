//! [`ConsumerGroups`]: one broker's consumer-group membership (Java `ConsumerManager` and
//! `ConsumerGroupInfo`).
//!
//! Members are registered per connection (Java keys them by channel): a heartbeat on a
//! connection registers or refreshes that connection's member, and closing the connection
//! removes it from every group. The subscription table is per group, shared by its members:
//! the latest heartbeat adds new topics, replaces a topic's subscription only with a higher
//! `subVersion`, and removes topics it does not list (`ConsumerGroupInfo.updateSubscription`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use proto::LanguageCode;
use proto::body::{ConsumeFromWhere, ConsumeType, ConsumerData, MessageModel, SubscriptionData};

use super::ConnKey;

/// One member: a client on one connection.
#[derive(Clone, Debug)]
pub(crate) struct Member {
    pub(crate) client_id: String,
    pub(crate) language: LanguageCode,
    pub(crate) version: i32,
    pub(crate) last_update: Instant,
}

/// One consumer group on one broker.
#[derive(Clone, Debug)]
pub(crate) struct GroupInfo {
    pub(crate) members: BTreeMap<ConnKey, Member>,
    pub(crate) subscriptions: BTreeMap<String, SubscriptionData>,
    pub(crate) consume_type: ConsumeType,
    pub(crate) message_model: MessageModel,
    pub(crate) consume_from_where: ConsumeFromWhere,
}

impl GroupInfo {
    /// `ConsumerGroupInfo.updateSubscription`: whether a topic was added or removed (a newer
    /// `subVersion` of a known topic replaces it without counting as a change).
    fn update_subscriptions(&mut self, subscriptions: &[SubscriptionData]) -> bool {
        let mut changed = false;
        for sub in subscriptions {
            match self.subscriptions.get(&sub.topic) {
                None => {
                    self.subscriptions.insert(sub.topic.clone(), sub.clone());
                    changed = true;
                }
                Some(old) if sub.sub_version > old.sub_version => {
                    self.subscriptions.insert(sub.topic.clone(), sub.clone());
                }
                Some(_) => {}
            }
        }
        let listed: BTreeSet<&str> = subscriptions.iter().map(|s| s.topic.as_str()).collect();
        let before = self.subscriptions.len();
        self.subscriptions
            .retain(|topic, _| listed.contains(topic.as_str()));
        changed || self.subscriptions.len() != before
    }

    /// The connections of the members.
    pub(crate) fn conns(&self) -> Vec<ConnKey> {
        self.members.keys().copied().collect()
    }

    /// The members, by connection.
    pub(crate) fn member_infos(&self) -> Vec<super::MemberInfo> {
        self.members
            .iter()
            .map(|(conn, m)| super::MemberInfo {
                conn: *conn,
                client_id: m.client_id.clone(),
                language: m.language,
                version: m.version,
                last_heartbeat: m.last_update,
            })
            .collect()
    }

    /// The members' client ids, without duplicates, sorted.
    pub(crate) fn client_ids(&self) -> Vec<String> {
        let ids: BTreeSet<&str> = self
            .members
            .values()
            .map(|m| m.client_id.as_str())
            .collect();
        ids.into_iter().map(str::to_owned).collect()
    }
}

/// A change of membership the broker announces with `NOTIFY_CONSUMER_IDS_CHANGED` to the
/// listed connections (`DefaultConsumerIdsChangeListener`, event `CHANGE`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Change {
    pub(crate) group: String,
    pub(crate) notify: Vec<ConnKey>,
}

/// All consumer groups of one broker.
#[derive(Clone, Debug, Default)]
pub(crate) struct ConsumerGroups {
    groups: BTreeMap<String, GroupInfo>,
}

impl ConsumerGroups {
    pub(crate) fn get(&self, group: &str) -> Option<&GroupInfo> {
        self.groups.get(group)
    }

    /// `ConsumerManager.registerConsumer`: registers `member` on `conn` for `data`'s group.
    /// A new connection in the group, or a topic added or removed, is a change announced to
    /// every member, the registering one included.
    pub(crate) fn register(
        &mut self,
        conn: ConnKey,
        member: Member,
        data: &ConsumerData,
    ) -> Option<Change> {
        let info = self
            .groups
            .entry(data.group_name.clone())
            .or_insert_with(|| GroupInfo {
                members: BTreeMap::new(),
                subscriptions: BTreeMap::new(),
                consume_type: data.consume_type,
                message_model: data.message_model,
                consume_from_where: data.consume_from_where,
            });
        info.consume_type = data.consume_type;
        info.message_model = data.message_model;
        info.consume_from_where = data.consume_from_where;
        // `ConsumerGroupInfo.updateChannel`: only a new channel counts; a different client id
        // on a known channel replaces the member silently.
        let new_channel = info.members.insert(conn, member).is_none();
        let new_topics = info.update_subscriptions(&data.subscription_data_set);
        (new_channel || new_topics).then(|| Change {
            group: data.group_name.clone(),
            notify: info.conns(),
        })
    }

    /// `ConsumerManager.unregisterConsumer`: removes the member on `conn` (whatever its client
    /// id: Java removes by channel). When the group existed, the remaining members are told,
    /// whether or not anything was removed; the group is forgotten once empty.
    pub(crate) fn unregister(&mut self, group: &str, conn: ConnKey) -> Option<Change> {
        let info = self.groups.get_mut(group)?;
        info.members.remove(&conn);
        let notify = info.conns();
        if notify.is_empty() {
            self.groups.remove(group);
        }
        Some(Change {
            group: group.to_owned(),
            notify,
        })
    }

    /// `ConsumerManager.doChannelCloseEvent`: removes `conn`'s members from every group; each
    /// group that lost one tells its remaining members.
    pub(crate) fn close(&mut self, conn: ConnKey) -> Vec<Change> {
        let mut changes = Vec::new();
        self.groups.retain(|group, info| {
            if info.members.remove(&conn).is_none() {
                return true;
            }
            changes.push(Change {
                group: group.clone(),
                notify: info.conns(),
            });
            !info.members.is_empty()
        });
        changes
    }

    /// Forgets everything (a broker restart).
    pub(crate) fn clear(&mut self) {
        self.groups.clear();
    }

    /// The live client ids of `group`, sorted.
    pub(crate) fn client_ids(&self, group: &str) -> Vec<String> {
        self.groups
            .get(group)
            .map(GroupInfo::client_ids)
            .unwrap_or_default()
    }

    /// The earliest time a member's registration expires without a new heartbeat.
    pub(crate) fn next_expiry(&self, timeout: Duration) -> Option<Instant> {
        self.groups
            .values()
            .flat_map(|g| g.members.values())
            .filter_map(|m| m.last_update.checked_add(timeout))
            .min()
    }

    /// The connections with a member that has not heartbeaten for longer than `timeout` at
    /// `now` (`ConsumerManager.scanNotActiveChannel`, which closes such channels).
    pub(crate) fn expired(&self, now: Instant, timeout: Duration) -> BTreeSet<ConnKey> {
        self.groups
            .values()
            .flat_map(|g| g.members.iter())
            .filter(|(_, m)| {
                m.last_update
                    .checked_add(timeout)
                    .is_some_and(|deadline| deadline <= now)
            })
            .map(|(conn, _)| *conn)
            .collect()
    }

    /// Group names, sorted.
    pub(crate) fn names(&self) -> impl Iterator<Item = &String> + '_ {
        self.groups.keys()
    }
}
