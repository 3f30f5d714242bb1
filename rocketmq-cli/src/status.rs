//! `rmq consumer-status`: each live member's running info, as `mqadmin consumerStatus` reads
//! it: the member ids from `GET_CONSUMER_LIST_BY_GROUP` (38), then `GET_CONSUMER_RUNNING_INFO`
//! (307) for each, which the broker forwards to the member over its own connection and relays
//! back (`AdminBrokerProcessor.callConsumer`).
//!
//! Brokers: those of the group's retry topic `%RETRY%<group>`, as Java's
//! `DefaultMQAdminExtImpl.getConsumerRunningInfo` finds them. Java asks one broker for the
//! members; every member heartbeats every broker it reads from, but one that just joined may not
//! have reached them all, so the ids of all of them are merged, each asked through a broker that
//! knows it.

use std::collections::BTreeMap;

use proto::body::{ConsumerListBody, ConsumerRunningInfo};
use proto::headers::{GetConsumerListByGroupRequest, GetConsumerRunningInfoRequest};
use proto::{Command, RequestCode, ResponseCode};
use serde_json::{Map, Value, json};

use crate::admin::{self, AdminError, Cluster, TIMEOUT, expect_success};

/// One member's answer: its running info, or why it gave none.
#[derive(Clone, Debug, PartialEq)]
pub struct MemberStatus {
    /// The member's client id (`ip@instance`, as it registered).
    pub client_id: String,
    /// What it answered.
    pub result: Result<ConsumerRunningInfo, String>,
}

impl MemberStatus {
    /// The JSON line `rmq consumer-status` prints: `{"client_id", "running_info"}` or
    /// `{"client_id", "error"}`. The running info keeps Java's member names, except that
    /// `mqTable` (and 5.x's `mqPopTable`), a map keyed by queue objects in Java, becomes an
    /// array of objects that carry `topic`, `brokerName` and `queueId` beside the queue's state.
    pub fn to_json(&self, cluster: &Cluster) -> Value {
        match &self.result {
            Ok(info) => json!({
                "client_id": self.client_id,
                "running_info": running_info_json(cluster, info),
            }),
            Err(error) => json!({ "client_id": self.client_id, "error": error }),
        }
    }
}

/// The members of `group` and what each answered.
pub fn consumer_status(cluster: &Cluster, group: &str) -> Result<Vec<MemberStatus>, AdminError> {
    let retry = format!("%RETRY%{group}");
    let route = match admin::route(cluster, &retry) {
        Err(AdminError::Refused {
            code: ResponseCode::TOPIC_NOT_EXIST,
            ..
        }) => {
            return Err(AdminError::NotFound(format!(
                "consumer group {group} not found: the name server has no route for its retry \
                 topic {retry} (no member of it ever ran on this cluster)"
            )));
        }
        other => other?,
    };
    let wire_group = cluster.wire_name(group)?;
    // Client id -> the broker (address) that knows it.
    let mut members: BTreeMap<String, String> = BTreeMap::new();
    let mut last_error = None;
    for broker in admin::brokers_of(&route, false) {
        let result = cluster
            .connect(&broker.addr)
            .map_err(AdminError::from)
            .and_then(|mut c| {
                let header = GetConsumerListByGroupRequest {
                    consumer_group: wire_group.clone(),
                };
                let response = c.call(
                    Command::request(RequestCode::GET_CONSUMER_LIST_BY_GROUP, &header),
                    TIMEOUT,
                )?;
                // A broker with no member answers SYSTEM_ERROR "no consumer for this group, G"
                // (`ConsumerManageProcessor.getConsumerListByGroup`): not a failure here.
                if response.response_code() == ResponseCode::SYSTEM_ERROR
                    && response
                        .remark
                        .as_deref()
                        .is_some_and(|r| r.starts_with("no consumer for this group"))
                {
                    return Ok(Vec::new());
                }
                let response = expect_success(response)?;
                ConsumerListBody::decode(&response.body)
                    .map(|body| body.consumer_id_list)
                    .map_err(|e| AdminError::Body(e.to_string()))
            });
        match result {
            Ok(ids) => {
                for id in ids {
                    members.entry(id).or_insert_with(|| broker.addr.clone());
                }
            }
            Err(e) => last_error = Some(e.at(&broker.name)),
        }
    }
    if members.is_empty() {
        return Err(match last_error {
            Some(e) => e,
            None => AdminError::NotFound(format!(
                "consumer group {group} has no live member (no broker of {retry} knows one)"
            )),
        });
    }
    let mut out = Vec::with_capacity(members.len());
    for (client_id, addr) in members {
        let result = running_info(cluster, &addr, &wire_group, &client_id);
        out.push(MemberStatus {
            client_id,
            result: result.map_err(|e| e.to_string()),
        });
    }
    Ok(out)
}

fn running_info(
    cluster: &Cluster,
    addr: &str,
    wire_group: &str,
    client_id: &str,
) -> Result<ConsumerRunningInfo, AdminError> {
    let mut client = cluster.connect(addr)?;
    let header = GetConsumerRunningInfoRequest {
        consumer_group: wire_group.to_owned(),
        client_id: client_id.to_owned(),
        jstack_enable: Some(false),
    };
    // The broker waits for the member (Broker2Client.callClient); Java's admin gives the whole
    // round trip three admin timeouts.
    let response = expect_success(client.call(
        Command::request(RequestCode::GET_CONSUMER_RUNNING_INFO, &header),
        TIMEOUT * 3,
    )?)?;
    ConsumerRunningInfo::decode(&response.body).map_err(|e| AdminError::Body(e.to_string()))
}

fn running_info_json(cluster: &Cluster, info: &ConsumerRunningInfo) -> Value {
    let mut value = serde_json::to_value(info).unwrap_or(Value::Null);
    if let Value::Object(fields) = &mut value {
        fields.insert("mqTable".into(), queue_table(cluster, &info.mq_table));
        if !info.mq_pop_table.is_empty() {
            fields.insert(
                "mqPopTable".into(),
                queue_table(cluster, &info.mq_pop_table),
            );
        }
        if let Some(Value::Array(subscriptions)) = fields.get_mut("subscriptionSet") {
            for subscription in subscriptions {
                if let Some(Value::String(topic)) = subscription.get_mut("topic") {
                    *topic = cluster.app_name(topic);
                }
            }
        }
        if let Some(Value::Object(status)) = fields.remove("statusTable") {
            let unwrapped: Map<String, Value> = status
                .into_iter()
                .map(|(topic, s)| (cluster.app_name(&topic), s))
                .collect();
            fields.insert("statusTable".into(), Value::Object(unwrapped));
        }
    }
    value
}

/// A queue-keyed table as an array of `{"topic","brokerName","queueId", ...state}`.
fn queue_table<V: serde::Serialize>(
    cluster: &Cluster,
    table: &BTreeMap<proto::MessageQueue, V>,
) -> Value {
    table
        .iter()
        .map(|(mq, state)| {
            let mut entry = Map::new();
            entry.insert("topic".into(), cluster.app_name(mq.topic()).into());
            entry.insert("brokerName".into(), mq.broker_name().into());
            entry.insert("queueId".into(), mq.queue_id().into());
            if let Ok(Value::Object(fields)) = serde_json::to_value(state) {
                entry.extend(fields);
            }
            Value::Object(entry)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use proto::MessageQueue;
    use proto::body::ProcessQueueInfo;

    use super::*;

    /// A running info as a namespaced member answers it (wire names), decoded from fastjson
    /// object keys, printed with the queue table as an array and the names unwrapped.
    #[test]
    fn queue_tables_become_arrays_without_the_namespace() {
        let mut info = ConsumerRunningInfo::default();
        info.mq_table.insert(
            MessageQueue::new("ns%T", "broker-a", 1),
            ProcessQueueInfo {
                commit_offset: 7,
                ..ProcessQueueInfo::default()
            },
        );
        info.status_table
            .insert("ns%T".into(), proto::body::ConsumeStatus::default());
        let info = ConsumerRunningInfo::decode(&info.encode()).unwrap();
        let cluster = Cluster::new("127.0.0.1:9876").with_namespace(Some("ns".into()));
        let member = MemberStatus {
            client_id: "127.0.0.1@1".into(),
            result: Ok(info),
        };
        let line = member.to_json(&cluster);
        assert_eq!(line["client_id"], "127.0.0.1@1");
        let table = line["running_info"]["mqTable"].as_array().unwrap();
        assert_eq!(table.len(), 1);
        assert_eq!(table[0]["topic"], "T");
        assert_eq!(table[0]["brokerName"], "broker-a");
        assert_eq!(table[0]["queueId"], 1);
        assert_eq!(table[0]["commitOffset"], 7);
        assert!(
            line["running_info"]["statusTable"]["T"].is_object(),
            "{line}"
        );

        let failed = MemberStatus {
            client_id: "c".into(),
            result: Err("timed out".into()),
        };
        assert_eq!(
            failed.to_json(&cluster),
            json!({"client_id": "c", "error": "timed out"})
        );
    }
}
