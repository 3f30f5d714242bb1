package peer;

import java.io.File;
import java.lang.reflect.Field;
import java.text.SimpleDateFormat;
import java.util.ArrayList;
import java.util.Date;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueConsistentHash;
import org.apache.rocketmq.client.consumer.store.OffsetStore;
import org.apache.rocketmq.client.impl.consumer.ProcessQueue;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.heartbeat.MessageModel;

/**
 * {@code consume}: a DefaultMQPushConsumer printing each delivery, its assignment as it changes,
 * and a final "done" line after a clean shutdown (which persists offsets and unregisters).
 */
final class Consume {
    private final Args a;
    private final Goal goal;
    private final boolean orderly;
    private final boolean alwaysFail;
    private final int reconsumeLater;
    private final Integer retryDelayLevel;

    /** Messages (by msg id) whose first delivery was failed for --reconsume-later. */
    private final Set<String> failedOnce = new HashSet<>();

    private DefaultMQPushConsumer consumer;
    /** Set once the run ends by itself, so the SIGTERM hook leaves the shutdown to it. */
    private volatile boolean stopping;

    Consume(List<String> argv) {
        a = new Args()
            .value("group", "topic", "expr", "sql", "mode", "strategy", "from", "offset-dir", "reconsume-later",
                "retry-delay-level", "max-reconsume-times", "count", "idle-exit", "duration-s", "instance",
                "rebalance-interval-ms")
            .flag("broadcasting", "always-fail")
            .parse(argv);
        a.required("group");
        a.required("topic");
        goal = new Goal(a);
        String mode = a.str("mode", "concurrent");
        if (!mode.equals("concurrent") && !mode.equals("orderly")) {
            throw new Args.UsageException("--mode is concurrent or orderly, not " + mode);
        }
        orderly = mode.equals("orderly");
        alwaysFail = a.has("always-fail");
        reconsumeLater = a.count("reconsume-later", 0);
        retryDelayLevel = a.integer("retry-delay-level", null);
        if (retryDelayLevel != null && orderly) {
            throw new Args.UsageException("--retry-delay-level is for --mode concurrent (orderly retries locally)");
        }
        if (a.has("expr") && a.has("sql")) throw new Args.UsageException("--expr or --sql, not both");
        if (a.has("offset-dir") && !a.has("broadcasting")) {
            throw new Args.UsageException("--offset-dir is for --broadcasting");
        }
    }

    int run() throws Exception {
        String namesrv = a.namesrv();
        Peer.configureClient(a);
        configureRebalance(a);
        if (a.has("offset-dir")) {
            // LocalFileOffsetStore reads this once, when the class loads: before the consumer starts.
            new File(a.str("offset-dir", null)).mkdirs();
            System.setProperty("rocketmq.client.localOffsetStoreDir", a.str("offset-dir", null));
        }
        Peer.watchdog(goal.hardLimitMs(), "consume");

        String group = a.required("group");
        String topic = a.required("topic");
        consumer = new DefaultMQPushConsumer(group, Acl.hook(a), new AllocateMessageQueueAveragely());
        consumer.setNamesrvAddr(namesrv);
        if (a.has("instance")) consumer.setInstanceName(a.str("instance", null));
        if (a.has("namespace")) consumer.setNamespace(a.str("namespace", null));
        consumer.setMessageModel(a.has("broadcasting") ? MessageModel.BROADCASTING : MessageModel.CLUSTERING);
        String strategy = a.str("strategy", "averagely");
        switch (strategy) {
            case "averagely":
                consumer.setAllocateMessageQueueStrategy(new AllocateMessageQueueAveragely());
                break;
            case "consistent-hash":
                consumer.setAllocateMessageQueueStrategy(new AllocateMessageQueueConsistentHash());
                break;
            default:
                throw new Args.UsageException("--strategy is averagely or consistent-hash, not " + strategy);
        }
        applyFrom(a.str("from", null), consumer::setConsumeFromWhere, consumer::setConsumeTimestamp);
        if (a.has("max-reconsume-times")) consumer.setMaxReconsumeTimes(a.integer("max-reconsume-times", null));
        // One message per listener call, so every delivery has its own outcome.
        consumer.setConsumeMessageBatchMaxSize(1);
        if (a.has("sql")) {
            consumer.subscribe(topic, MessageSelector.bySql(a.str("sql", null)));
        } else {
            consumer.subscribe(topic, a.str("expr", "*"));
        }
        if (orderly) {
            consumer.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
                boolean ok = deliver(msgs, ctx.getMessageQueue());
                return ok ? ConsumeOrderlyStatus.SUCCESS : ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
            });
        } else {
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                boolean ok = deliver(msgs, ctx.getMessageQueue());
                if (!ok && retryDelayLevel != null) ctx.setDelayLevelWhenNextConsume(retryDelayLevel);
                return ok ? ConsumeConcurrentlyStatus.CONSUME_SUCCESS : ConsumeConcurrentlyStatus.RECONSUME_LATER;
            });
        }

        consumer.start();
        // SIGTERM (a test stopping the peer) leaves the group cleanly too, and still says "done".
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (!stopping) {
                consumer.shutdown();
                Out.last(done("signal"));
            }
        }, "java-peer-sigterm"));

        Goal.End end;
        try {
            String clientId = consumer.getDefaultMQPushConsumerImpl().getmQClientFactory().getClientId();
            Map<String, Object> started = Out.obj(
                "event", "started",
                "client_id", clientId,
                "instance_name", consumer.getInstanceName(),
                "group", group,
                "topic", topic,
                "mode", orderly ? "orderly" : "concurrent",
                "message_model", consumer.getMessageModel().name());
            if (a.has("broadcasting")) started.put("offset_file", offsetFile(consumer, clientId, group));
            Out.line(started);

            // The assignment is polled, not hooked: the push consumer offers no listener for its
            // own rebalance.
            List<Map<String, Object>> lastAssignment = null;
            while (true) {
                List<Map<String, Object>> now = assignment();
                if (!now.equals(lastAssignment)) {
                    Out.line(Out.obj("event", "assignment", "queues", now));
                    lastAssignment = now;
                }
                end = goal.check();
                if (end != null) break;
                Peer.sleep(200);
            }
        } finally {
            // On an error too: shutdown() persists offsets and unregisters from the brokers.
            stopping = true;
            consumer.shutdown();
        }
        Out.last(done(end.reason));
        if (!end.ok) {
            System.err.println("java-peer: consume: " + goal.describeMiss() + " (" + end.reason + ")");
            return 1;
        }
        return 0;
    }

    private Map<String, Object> done(String reason) {
        return Out.obj("event", "done", "consumed", goal.consumed(), "deliveries", goal.deliveries(),
            "reason", reason);
    }

    /**
     * Decides and prints the outcome of one listener call (one message: batch size 1). A message
     * an admin pushed with consume-directly is printed ("direct": true) but is no delivery of the
     * subscription: it neither counts towards the goal nor uses up --reconsume-later.
     */
    private boolean deliver(List<MessageExt> msgs, MessageQueue mq) {
        boolean ok = true;
        for (MessageExt m : msgs) ok &= Messages.isDirect(m) ? !alwaysFail : !shouldFail(m);
        for (MessageExt m : msgs) {
            Out.line(Messages.line(m, mq.getBrokerName(), ok ? "success" : "later"));
            if (!Messages.isDirect(m)) goal.delivered(ok);
        }
        return ok;
    }

    private synchronized boolean shouldFail(MessageExt m) {
        if (alwaysFail) return true;
        if (reconsumeLater == 0) return false;
        // A redelivery keeps the message's UNIQ_KEY (getMsgId), so it is recognised and succeeds.
        String id = m.getMsgId();
        if (failedOnce.contains(id)) return false;
        if (failedOnce.size() < reconsumeLater) {
            failedOnce.add(id);
            return true;
        }
        return false;
    }

    /** The queues this consumer holds now, retry topics included, dropped ones left out. */
    private List<Map<String, Object>> assignment() {
        Map<MessageQueue, ProcessQueue> table =
            consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable();
        List<MessageQueue> held = new ArrayList<>();
        for (Map.Entry<MessageQueue, ProcessQueue> e : table.entrySet()) {
            if (!e.getValue().isDropped()) held.add(e.getKey());
        }
        return Messages.queues(held);
    }

    /**
     * The offsets file LocalFileOffsetStore writes. Read from the store itself (its private
     * storePath), so the line shows what Java really uses; rebuilt from the same rule if not.
     */
    private static String offsetFile(DefaultMQPushConsumer c, String clientId, String group) {
        OffsetStore store = c.getDefaultMQPushConsumerImpl().getOffsetStore();
        try {
            Field f = store.getClass().getDeclaredField("storePath");
            f.setAccessible(true);
            return (String) f.get(store);
        } catch (ReflectiveOperationException | RuntimeException e) {
            String dir = System.getProperty("rocketmq.client.localOffsetStoreDir",
                System.getProperty("user.home") + File.separator + ".rocketmq_offsets");
            return dir + File.separator + clientId + File.separator + group + File.separator + "offsets.json";
        }
    }

    /** rocketmq.client.rebalance.waitInterval is read once by RebalanceService's initialiser. */
    static void configureRebalance(Args a) {
        if (a.has("rebalance-interval-ms")) {
            System.setProperty("rocketmq.client.rebalance.waitInterval",
                Long.toString(a.positive("rebalance-interval-ms", null)));
        }
    }

    /**
     * --from first|last|timestamp:MS. Java takes the timestamp as local time to the second
     * (yyyyMMddHHmmss), so milliseconds are cut. It applies only to a group without offsets.
     */
    static void applyFrom(String from, Consumer<ConsumeFromWhere> setWhere, Consumer<String> setTimestamp) {
        if (from == null) return;
        if (from.equals("first")) {
            setWhere.accept(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        } else if (from.equals("last")) {
            setWhere.accept(ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
        } else if (from.startsWith("timestamp:")) {
            long ms;
            try {
                ms = Long.parseLong(from.substring("timestamp:".length()));
            } catch (NumberFormatException e) {
                throw new Args.UsageException("--from timestamp:MS wants milliseconds, got " + from);
            }
            setWhere.accept(ConsumeFromWhere.CONSUME_FROM_TIMESTAMP);
            setTimestamp.accept(new SimpleDateFormat("yyyyMMddHHmmss").format(new Date(ms)));
        } else {
            throw new Args.UsageException("--from is first, last or timestamp:MS, not " + from);
        }
    }
}
