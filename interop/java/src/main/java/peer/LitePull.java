package peer;

import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * {@code lite-pull}: a DefaultLitePullConsumer subscribed to a topic, polling and committing after
 * every poll; the same "message", "assignment" and "done" lines as {@code consume}.
 */
final class LitePull {
    /** Short polls keep the loop checking its goal and assignment often. */
    private static final long POLL_MS = 200;

    private final Args a;
    private final Goal goal;
    /** Set once the run ends (or SIGTERM arrives), so the consumer is shut down once. */
    private volatile boolean stopping;

    LitePull(List<String> argv) {
        a = new Args()
            .value("group", "topic", "expr", "from", "count", "idle-exit", "duration-s", "instance",
                "rebalance-interval-ms")
            .parse(argv);
        a.required("group");
        a.required("topic");
        goal = new Goal(a);
    }

    int run() throws Exception {
        String namesrv = a.namesrv();
        Peer.configureClient(a);
        Consume.configureRebalance(a);
        Peer.watchdog(goal.hardLimitMs(), "lite-pull");

        String group = a.required("group");
        String topic = a.required("topic");
        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer(group, Acl.hook(a));
        consumer.setNamesrvAddr(namesrv);
        if (a.has("instance")) consumer.setInstanceName(a.str("instance", null));
        Consume.applyFrom(a.str("from", null), consumer::setConsumeFromWhere, consumer::setConsumeTimestamp);
        // Offsets move only by the commitSync() after each poll, never by the background timer.
        consumer.setAutoCommit(false);
        consumer.setPollTimeoutMillis(POLL_MS);
        consumer.subscribe(topic, a.str("expr", "*"));
        consumer.start();
        // SIGTERM leaves the group cleanly (shutdown() persists the committed offsets) and says "done".
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (!stopping) {
                stopping = true;
                consumer.shutdown();
                Out.last(Out.obj("event", "done", "consumed", goal.consumed(), "deliveries", goal.deliveries(),
                    "reason", "signal"));
            }
        }, "java-peer-sigterm"));
        // The client instance is keyed by this id (start() has set the instance name by then).
        Out.line(Out.obj("event", "started", "client_id", consumer.buildMQClientId(),
            "instance_name", consumer.getInstanceName(), "group", group, "topic", topic, "mode", "lite-pull"));

        List<Map<String, Object>> lastAssignment = null;
        Goal.End end;
        try {
            while (true) {
                List<Map<String, Object>> now = Messages.queues(consumer.assignment());
                if (!now.equals(lastAssignment)) {
                    Out.line(Out.obj("event", "assignment", "queues", now));
                    lastAssignment = now;
                }
                List<MessageExt> msgs = consumer.poll(POLL_MS);
                for (MessageExt m : msgs) {
                    Out.line(Messages.line(m, m.getBrokerName(), "success"));
                    goal.delivered(true);
                }
                if (!msgs.isEmpty()) consumer.commitSync();
                end = goal.check();
                if (end != null) break;
            }
        } finally {
            stopping = true;
            consumer.shutdown();
        }
        Out.last(Out.obj("event", "done", "consumed", goal.consumed(), "deliveries", goal.deliveries(),
            "reason", end.reason));
        if (!end.ok) {
            System.err.println("java-peer: lite-pull: " + goal.describeMiss() + " (" + end.reason + ")");
            return 1;
        }
        return 0;
    }
}
