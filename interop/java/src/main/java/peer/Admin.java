package peer;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.Set;
import java.util.TreeSet;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.constant.PermName;
import org.apache.rocketmq.common.admin.RollbackStats;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.ResponseCode;
import org.apache.rocketmq.common.protocol.body.ConsumeMessageDirectlyResult;
import org.apache.rocketmq.common.protocol.body.ConsumerConnection;
import org.apache.rocketmq.common.protocol.body.ConsumerRunningInfo;
import org.apache.rocketmq.common.protocol.body.ClusterInfo;
import org.apache.rocketmq.common.protocol.body.Connection;
import org.apache.rocketmq.common.protocol.body.ProcessQueueInfo;
import org.apache.rocketmq.common.protocol.heartbeat.SubscriptionData;
import org.apache.rocketmq.common.protocol.route.BrokerData;
import org.apache.rocketmq.common.protocol.route.QueueData;
import org.apache.rocketmq.common.protocol.route.TopicRouteData;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * {@code admin ...}: what mqadmin asks of a consumer group through the broker, with Java's
 * DefaultMQAdminExt, printed as one JSON line. These are the requests a broker forwards to the
 * group's clients (running info, consume directly, reset offset), so they test the Rust client's
 * answers.
 */
final class Admin {
    private Admin() {}

    static int run(List<String> argv) throws Exception {
        if (argv.isEmpty()) throw new Args.UsageException("admin needs a subcommand");
        String sub = argv.get(0);
        List<String> rest = argv.subList(1, argv.size());
        Args a = new Args().value("group", "rpc-timeout-ms");
        switch (sub) {
            case "reset-offset":
                a.value("topic", "timestamp").flag("force");
                break;
            case "clients":
                a.value("min-clients", "max-clients");
                break;
            case "running-info":
                a.value("client-id").flag("jstack");
                break;
            case "consume-directly":
                a.value("client-id", "msg-id", "topic");
                break;
            case "rebalance":
                break;
            case "create-topic":
                a.value("topic", "queues", "cluster");
                break;
            default:
                throw new Args.UsageException("unknown admin subcommand " + sub);
        }
        a.parse(rest);
        String group = sub.equals("create-topic") ? null : a.required("group");
        if (sub.equals("create-topic")) a.required("topic");
        String namesrv = a.namesrv();
        Peer.configureClient(a);
        long deadline = System.currentTimeMillis() + a.timeoutMs();
        Peer.watchdog(a.timeoutMs() + 15_000, "admin " + sub);

        DefaultMQAdminExt admin = new DefaultMQAdminExt(Acl.hook(a), a.positive("rpc-timeout-ms", 10000));
        admin.setNamesrvAddr(namesrv);
        admin.start();
        try {
            switch (sub) {
                case "reset-offset":
                    resetOffset(admin, a, group);
                    break;
                case "clients":
                    clients(admin, a, group, deadline);
                    break;
                case "running-info":
                    runningInfo(admin, a, group);
                    break;
                case "consume-directly":
                    consumeDirectly(admin, a, group);
                    break;
                case "create-topic":
                    createTopic(admin, a, deadline);
                    break;
                default:
                    rebalance(admin, group);
                    break;
            }
        } finally {
            admin.shutdown();
        }
        return 0;
    }

    /**
     * resetOffsetByTimestamp asks the broker to tell the online clients their new offsets. With
     * nobody online the broker answers CONSUMER_NOT_ONLINE, and then, like mqadmin's resetOffsetByTime,
     * the offsets are written on the broker directly (the "old" way): "method" says which it was.
     */
    private static void resetOffset(DefaultMQAdminExt admin, Args a, String group) throws Exception {
        String topic = a.required("topic");
        a.required("timestamp");
        long ts = a.lng("timestamp", null);
        boolean force = a.has("force");
        List<Map<String, Object>> offsets = new ArrayList<>();
        String method = "new";
        try {
            Map<MessageQueue, Long> table = admin.resetOffsetByTimestamp(topic, group, ts, force);
            TreeMap<MessageQueue, Long> sorted = new TreeMap<>(Messages.QUEUE_ORDER);
            sorted.putAll(table);
            for (Map.Entry<MessageQueue, Long> e : sorted.entrySet()) {
                offsets.add(Out.obj("broker", e.getKey().getBrokerName(), "queue_id", e.getKey().getQueueId(),
                    "offset", e.getValue()));
            }
        } catch (MQClientException e) {
            if (e.getResponseCode() != ResponseCode.CONSUMER_NOT_ONLINE) throw e;
            method = "old";
            List<RollbackStats> stats = admin.resetOffsetByTimestampOld(group, topic, ts, force);
            stats.sort((x, y) -> x.getBrokerName().equals(y.getBrokerName())
                ? Long.compare(x.getQueueId(), y.getQueueId())
                : x.getBrokerName().compareTo(y.getBrokerName()));
            for (RollbackStats s : stats) {
                offsets.add(Out.obj("broker", s.getBrokerName(), "queue_id", s.getQueueId(),
                    "offset", s.getRollbackOffset()));
            }
        }
        Out.last(Out.obj("event", "reset", "method", method, "offsets", offsets));
    }

    /**
     * The group's clients as the broker knows them from heartbeats; a group with none online is
     * an empty list. --min-clients N / --max-clients N
     * wait (up to --timeout-s) until at least / at most N are registered: a client joining, or
     * gone after its unregister.
     */
    private static void clients(DefaultMQAdminExt admin, Args a, String group, long deadline) throws Exception {
        Integer min = a.count("min-clients", null);
        Integer max = a.count("max-clients", null);
        ConsumerConnection cc;
        while (true) {
            cc = connections(admin, group);
            int n = cc.getConnectionSet().size();
            if ((min == null || n >= min) && (max == null || n <= max)) break;
            if (System.currentTimeMillis() >= deadline) {
                throw new IllegalStateException(n + " clients in group " + group + " at the timeout, wanted"
                    + (min == null ? "" : " at least " + min) + (max == null ? "" : " at most " + max));
            }
            Peer.sleep(300);
        }
        List<Connection> conns = new ArrayList<>(cc.getConnectionSet());
        conns.sort((x, y) -> x.getClientId().compareTo(y.getClientId()));
        List<Map<String, Object>> clients = new ArrayList<>();
        for (Connection c : conns) {
            clients.add(Out.obj(
                "client_id", c.getClientId(),
                "client_addr", c.getClientAddr(),
                "language", c.getLanguage() == null ? null : c.getLanguage().name(),
                "version", c.getVersion(),
                "version_desc", MQVersion.getVersionDesc(c.getVersion())));
        }
        List<Map<String, Object>> subs = new ArrayList<>();
        if (cc.getSubscriptionTable() != null) {
            for (SubscriptionData s : new TreeMap<>(cc.getSubscriptionTable()).values()) subs.add(subscription(s));
        }
        Out.last(Out.obj(
            "event", "clients",
            "clients", clients,
            "subscriptions", subs,
            "consume_type", cc.getConsumeType() == null ? null : cc.getConsumeType().name(),
            "message_model", cc.getMessageModel() == null ? null : cc.getMessageModel().name(),
            "consume_from_where", cc.getConsumeFromWhere() == null ? null : cc.getConsumeFromWhere().name()));
    }

    /**
     * The group's connections, none when nobody is online: the broker then answers
     * CONSUMER_NOT_ONLINE, and for a group no client ever joined the admin finds no route for
     * its retry topic (which the broker creates at a member's first heartbeat) at all.
     */
    private static ConsumerConnection connections(DefaultMQAdminExt admin, String group) throws Exception {
        try {
            return admin.examineConsumerConnectionInfo(group);
        } catch (MQBrokerException e) {
            if (e.getResponseCode() != ResponseCode.CONSUMER_NOT_ONLINE) throw e;
        } catch (MQClientException e) {
            if (e.getResponseCode() != ResponseCode.TOPIC_NOT_EXIST) throw e;
        }
        return new ConsumerConnection();
    }

    private static Map<String, Object> subscription(SubscriptionData s) {
        return Out.obj(
            "topic", s.getTopic(),
            "expression", s.getSubString(),
            "expression_type", s.getExpressionType(),
            "tags", s.getTagsSet() == null ? null : new TreeSet<>(s.getTagsSet()),
            "codes", s.getCodeSet() == null ? null : new TreeSet<>(s.getCodeSet()),
            "sub_version", s.getSubVersion());
    }

    /** GET_CONSUMER_RUNNING_INFO, forwarded by the broker to the client and answered by it. */
    private static void runningInfo(DefaultMQAdminExt admin, Args a, String group) throws Exception {
        String clientId = a.required("client-id");
        boolean jstack = a.has("jstack");
        ConsumerRunningInfo info = admin.getConsumerRunningInfo(group, clientId, jstack);
        if (info == null) throw new IllegalStateException("no running info from " + clientId);
        Map<String, Object> props = new TreeMap<>();
        if (info.getProperties() != null) {
            for (String k : info.getProperties().stringPropertyNames()) props.put(k, info.getProperties().getProperty(k));
        }
        List<String> topics = new ArrayList<>();
        List<Map<String, Object>> subs = new ArrayList<>();
        if (info.getSubscriptionSet() != null) {
            for (SubscriptionData s : info.getSubscriptionSet()) {
                topics.add(s.getTopic());
                subs.add(subscription(s));
            }
        }
        Map<String, Object> o = Out.obj(
            "event", "running_info",
            "client_id", clientId,
            "properties", props,
            "subscriptions", topics,
            "subscription_data", subs,
            "queues", queueTable(info),
            "status", info.getStatusTable() == null ? List.of() : new ArrayList<>(info.getStatusTable().keySet()));
        if (jstack) o.put("jstack", info.getJstack());
        Out.last(o);
    }

    private static List<Map<String, Object>> queueTable(ConsumerRunningInfo info) {
        List<Map<String, Object>> queues = new ArrayList<>();
        if (info.getMqTable() == null) return queues;
        TreeMap<MessageQueue, ProcessQueueInfo> sorted = new TreeMap<>(Messages.QUEUE_ORDER);
        sorted.putAll(info.getMqTable());
        for (Map.Entry<MessageQueue, ProcessQueueInfo> e : sorted.entrySet()) {
            Map<String, Object> q = Messages.queue(e.getKey());
            ProcessQueueInfo p = e.getValue();
            q.put("commit_offset", p == null ? null : p.getCommitOffset());
            q.put("cached_msg_count", p == null ? null : p.getCachedMsgCount());
            q.put("locked", p == null ? null : p.isLocked());
            q.put("dropped", p == null ? null : p.isDroped());
            queues.add(q);
        }
        return queues;
    }

    /**
     * CONSUME_MESSAGE_DIRECTLY. Without --topic, --msg-id is an offset message id (it names the
     * broker and commit-log offset); with --topic it may be the UNIQ_KEY, looked up by that key.
     */
    private static void consumeDirectly(DefaultMQAdminExt admin, Args a, String group) throws Exception {
        String clientId = a.required("client-id");
        String msgId = a.required("msg-id");
        String topic = a.str("topic", null);
        ConsumeMessageDirectlyResult r = topic == null
            ? admin.consumeMessageDirectly(group, clientId, msgId)
            : admin.consumeMessageDirectly(group, clientId, topic, msgId);
        if (r == null) throw new IllegalStateException("no answer from " + clientId);
        Out.last(Out.obj(
            "event", "consume_directly",
            "result", r.getConsumeResult() == null ? null : r.getConsumeResult().name(),
            "order", r.isOrder(),
            "auto_commit", r.isAutoCommit(),
            "remark", r.getRemark(),
            "spent_ms", r.getSpentTimeMills()));
    }

    /**
     * UPDATE_AND_CREATE_TOPIC (17, an admin-only request where the broker enforces ACL) on every
     * master of --cluster (default DefaultCluster), --queues read and write queues (default 4),
     * then waits (up to --timeout-s) until the name server's route lists them all.
     */
    private static void createTopic(DefaultMQAdminExt admin, Args a, long deadline) throws Exception {
        String topic = a.required("topic");
        int queues = a.positive("queues", 4);
        String cluster = a.str("cluster", "DefaultCluster");
        ClusterInfo info = admin.examineBrokerClusterInfo();
        Set<String> names = info.getClusterAddrTable() == null ? null : info.getClusterAddrTable().get(cluster);
        if (names == null || names.isEmpty()) throw new IllegalStateException("no brokers in cluster " + cluster);
        List<String> brokers = new ArrayList<>(new TreeSet<>(names));
        for (String name : brokers) {
            BrokerData b = info.getBrokerAddrTable().get(name);
            String master = b == null ? null : b.getBrokerAddrs().get(MixAll.MASTER_ID);
            if (master == null) throw new IllegalStateException("broker " + name + " has no master");
            admin.createAndUpdateTopicConfig(master, new TopicConfig(topic, queues, queues, PermName.PERM_READ | PermName.PERM_WRITE));
        }
        while (true) {
            Set<String> routed = new TreeSet<>();
            try {
                TopicRouteData route = admin.examineTopicRouteInfo(topic);
                for (QueueData q : route.getQueueDatas()) routed.add(q.getBrokerName());
            } catch (MQClientException e) {
                if (e.getResponseCode() != ResponseCode.TOPIC_NOT_EXIST) throw e;
            }
            if (routed.containsAll(brokers)) break;
            if (System.currentTimeMillis() >= deadline) {
                throw new IllegalStateException("topic " + topic + " routed on " + routed + ", not on all of " + brokers);
            }
            Peer.sleep(200);
        }
        Out.last(Out.obj("event", "topic_created", "topic", topic, "queues", queues, "brokers", brokers));
    }

    /** Each client's own account of the queues it holds (its running info's mqTable). */
    private static void rebalance(DefaultMQAdminExt admin, String group) throws Exception {
        ConsumerConnection cc = connections(admin, group);
        Map<String, Object> clients = new TreeMap<>();
        for (Connection c : cc.getConnectionSet()) {
            ConsumerRunningInfo info = admin.getConsumerRunningInfo(group, c.getClientId(), false);
            if (info == null) throw new IllegalStateException("no running info from " + c.getClientId());
            List<MessageQueue> qs = info.getMqTable() == null ? List.of() : new ArrayList<>(info.getMqTable().keySet());
            clients.put(c.getClientId(), Messages.queues(qs));
        }
        Out.last(Out.obj("event", "rebalance", "clients", clients));
    }
}
