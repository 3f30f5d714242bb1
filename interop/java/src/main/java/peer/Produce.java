package peer;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;

/**
 * {@code produce}: sends N messages with Java's DefaultMQProducer, one JSON line per message sent
 * (with what the broker answered), then {"sent": N}.
 */
final class Produce {
    /** Queue choice for sharding keys: the same hash the tests can compute on their side. */
    private static final MessageQueueSelector BY_KEY_HASH =
        (mqs, msg, key) -> mqs.get(Math.floorMod(key.hashCode(), mqs.size()));

    private final Args a;
    private final String topic;
    private final int count;
    private final String tag;
    private final String keysPrefix;
    private final Map<String, String> props = new LinkedHashMap<>();
    private final String bodyTemplate;
    private final Integer bodySize;
    private final Integer batch;
    private final Integer delayLevel;
    private final Integer shardingKeys;

    Produce(List<String> argv) {
        a = new Args()
            .value("topic", "count", "group", "instance", "tag", "keys", "body", "body-size", "batch",
                "delay-level", "sharding-keys", "send-timeout-ms")
            .multi("prop")
            .parse(argv);
        topic = a.required("topic");
        a.required("count");
        count = a.count("count", 0);
        tag = a.str("tag", null);
        keysPrefix = a.str("keys", null);
        for (String p : a.all("prop")) {
            int eq = p.indexOf('=');
            if (eq <= 0) throw new Args.UsageException("--prop wants k=v, got " + p);
            props.put(p.substring(0, eq), p.substring(eq + 1));
        }
        bodyTemplate = a.str("body", "java-{i}");
        bodySize = a.count("body-size", null);
        batch = a.positive("batch", null);
        delayLevel = a.positive("delay-level", null);
        shardingKeys = a.positive("sharding-keys", null);
        // A batch goes to one queue chosen by the producer, and the broker refuses delayed batches.
        if (batch != null && shardingKeys != null) {
            throw new Args.UsageException("--batch and --sharding-keys do not combine");
        }
        if (batch != null && delayLevel != null) {
            throw new Args.UsageException("--batch and --delay-level do not combine (brokers refuse delayed batches)");
        }
    }

    int run() throws Exception {
        String namesrv = a.namesrv();
        Peer.configureClient(a);
        // Sending has no goal to wait for; the watchdog is its whole bound.
        Peer.watchdog(a.timeoutMs(), "produce");

        DefaultMQProducer producer = new DefaultMQProducer(a.str("group", "java-peer-producer"), Acl.hook(a));
        producer.setNamesrvAddr(namesrv);
        if (a.has("instance")) producer.setInstanceName(a.str("instance", null));
        if (a.has("namespace")) producer.setNamespace(a.str("namespace", null));
        // Two busy cores: the 3 s default is close to what a send can take under a build.
        producer.setSendMsgTimeout(a.positive("send-timeout-ms", 10000));
        producer.start();
        try {
            List<Item> pending = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                pending.add(build(i));
                if (batch == null) {
                    send(producer, pending.get(0));
                    pending.clear();
                } else if (pending.size() == batch || i == count - 1) {
                    sendBatch(producer, pending);
                    pending.clear();
                }
            }
            Out.last(Out.obj("sent", count));
        } finally {
            producer.shutdown();
        }
        return 0;
    }

    /** A message and what its JSON line repeats of it. */
    private static final class Item {
        final int i;
        final Message msg;
        final byte[] body;
        final String shardingKey;

        Item(int i, Message msg, byte[] body, String shardingKey) {
            this.i = i;
            this.msg = msg;
            this.body = body;
            this.shardingKey = shardingKey;
        }
    }

    private Item build(int i) {
        byte[] body = body(i);
        Message m = new Message(topic, body);
        if (tag != null) m.setTags(tag);
        String shardingKey = shardingKeys == null ? null : "key-" + (i % shardingKeys);
        List<String> keys = new ArrayList<>();
        if (keysPrefix != null) keys.add(keysPrefix + "-" + i);
        if (shardingKey != null) keys.add(shardingKey);
        // Message.setKeys(Collection) joins with spaces, the separator brokers index keys by.
        if (!keys.isEmpty()) m.setKeys(keys);
        for (Map.Entry<String, String> p : props.entrySet()) m.putUserProperty(p.getKey(), p.getValue());
        if (delayLevel != null) m.setDelayTimeLevel(delayLevel);
        return new Item(i, m, body, shardingKey);
    }

    /**
     * The template with {i} replaced, padded with 'x' (or cut) to --body-size bytes. Padding is
     * compressible on purpose: bodies over 4096 bytes are sent compressed by the Java producer.
     */
    private byte[] body(int i) {
        byte[] text = bodyTemplate.replace("{i}", Integer.toString(i)).getBytes(StandardCharsets.UTF_8);
        if (bodySize == null) return text;
        byte[] b = new byte[bodySize];
        int n = Math.min(text.length, bodySize);
        System.arraycopy(text, 0, b, 0, n);
        for (int k = n; k < bodySize; k++) b[k] = 'x';
        return b;
    }

    private void send(DefaultMQProducer producer, Item it) throws Exception {
        SendResult r = shardingKeys == null
            ? producer.send(it.msg)
            : producer.send(it.msg, BY_KEY_HASH, it.shardingKey);
        print(it, r, r.getMsgId(), r.getOffsetMsgId(), r.getQueueOffset());
    }

    /**
     * send(Collection): one result for the batch, whose ids are the messages' ids joined with
     * commas and whose queue offset is the first message's; the rest follow it one by one.
     */
    private void sendBatch(DefaultMQProducer producer, List<Item> items) throws Exception {
        List<Message> msgs = new ArrayList<>();
        for (Item it : items) msgs.add(it.msg);
        SendResult r = producer.send(msgs);
        String[] ids = split(r.getMsgId(), items.size());
        String[] offsetIds = split(r.getOffsetMsgId(), items.size());
        for (int k = 0; k < items.size(); k++) {
            print(items.get(k), r, ids[k], offsetIds[k], r.getQueueOffset() + k);
        }
    }

    private static String[] split(String joined, int n) {
        String[] parts = joined == null ? new String[0] : joined.split(",");
        if (parts.length != n) {
            // Not the shape this program expects: say so rather than print wrong ids.
            System.err.println("java-peer: batch of " + n + " answered with " + parts.length + " ids: " + joined);
            String[] padded = new String[n];
            System.arraycopy(parts, 0, padded, 0, Math.min(n, parts.length));
            return padded;
        }
        return parts;
    }

    private void print(Item it, SendResult r, String msgId, String offsetMsgId, long queueOffset) {
        Map<String, Object> o = Out.obj(
            "i", it.i,
            "msg_id", msgId,
            "offset_msg_id", offsetMsgId,
            "queue_id", r.getMessageQueue().getQueueId(),
            "queue_offset", queueOffset,
            "broker", r.getMessageQueue().getBrokerName(),
            "status", r.getSendStatus().name());
        if (bodySize == null) {
            o.put("body", new String(it.body, StandardCharsets.UTF_8));
        } else {
            o.put("body_sha256", Messages.sha256(it.body));
            o.put("body_len", it.body.length);
        }
        o.put("tag", it.msg.getTags());
        o.put("keys", it.msg.getKeys());
        o.put("sharding_key", it.shardingKey);
        o.put("delay_level", delayLevel);
        o.put("sent_ms", System.currentTimeMillis());
        Out.line(o);
    }
}
