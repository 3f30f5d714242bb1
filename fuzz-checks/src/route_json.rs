//! The tolerant JSON reader and the route-data decoder never panic, and a route that decodes
//! survives an encode/decode round trip.

use rocketmq_proto::body::TopicRouteData;

/// Runs the check on one input; panics when it finds a fault.
pub fn check(data: &[u8]) {
    let _ = rocketmq_proto::json::parse(data);
    if let Ok(route) = TopicRouteData::decode(data) {
        let again = TopicRouteData::decode(&route.encode()).expect("an encoded route decodes");
        assert_eq!(route, again);
        let _ = route.subscribe_queues("T");
    }
}
