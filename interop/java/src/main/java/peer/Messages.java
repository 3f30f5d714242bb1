package peer;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/** How messages, bodies and queues are written on the JSON lines. */
final class Messages {
    /** Bodies longer than this are reported by digest, keeping lines short for big-body tests. */
    static final int INLINE_BODY_MAX = 256;

    static final Comparator<MessageQueue> QUEUE_ORDER = Comparator
        .comparing(MessageQueue::getTopic)
        .thenComparing(MessageQueue::getBrokerName)
        .thenComparingInt(MessageQueue::getQueueId);

    private Messages() {}

    /**
     * One "message" line. {@code broker} comes from the consumer's queue: a received MessageExt
     * does not always carry its broker name.
     */
    static Map<String, Object> line(MessageExt m, String broker, String outcome) {
        Map<String, Object> o = Out.obj(
            "event", "message",
            "topic", m.getTopic(),
            "queue_id", m.getQueueId(),
            "queue_offset", m.getQueueOffset(),
            "broker", broker != null ? broker : m.getBrokerName(),
            "msg_id", m.getMsgId(),
            "offset_msg_id", offsetMsgId(m));
        putBody(o, m.getBody());
        o.put("tags", m.getTags());
        o.put("keys", m.getKeys());
        o.put("reconsume_times", m.getReconsumeTimes());
        // Every property, system ones (UNIQ_KEY, TAGS, MIN_OFFSET, RETRY_TOPIC, ...) included.
        o.put("properties", new TreeMap<>(m.getProperties()));
        o.put("born_timestamp", m.getBornTimestamp());
        o.put("store_timestamp", m.getStoreTimestamp());
        o.put("received_ms", System.currentTimeMillis());
        o.put("direct", isDirect(m));
        o.put("outcome", outcome);
        return o;
    }

    /**
     * A received message is a MessageClientExt, whose getMsgId() is the UNIQ_KEY when there is one
     * and whose offset id (broker address and commit-log offset) is kept apart; a plain MessageExt
     * has only the one id.
     */
    static String offsetMsgId(MessageExt m) {
        return m instanceof MessageClientExt ? ((MessageClientExt) m).getOffsetMsgId() : m.getMsgId();
    }

    /**
     * Pulled messages decode as MessageClientExt; the one an admin's consume-directly hands the
     * listener is a plain MessageExt (and its getMsgId() is then the offset id, not the UNIQ_KEY).
     */
    static boolean isDirect(MessageExt m) {
        return !(m instanceof MessageClientExt);
    }

    /** "body" as text when short valid UTF-8; otherwise "body_sha256" and "body_len". */
    static void putBody(Map<String, Object> o, byte[] body) {
        if (body == null) body = new byte[0];
        String text = body.length <= INLINE_BODY_MAX ? utf8(body) : null;
        if (text != null) {
            o.put("body", text);
        } else {
            o.put("body_sha256", sha256(body));
            o.put("body_len", body.length);
        }
    }

    /** The bytes as strict UTF-8, or null when they are not valid UTF-8. */
    static String utf8(byte[] b) {
        try {
            return StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT)
                .decode(ByteBuffer.wrap(b))
                .toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }

    static String sha256(byte[] b) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    static Map<String, Object> queue(MessageQueue q) {
        return Out.obj("topic", q.getTopic(), "broker", q.getBrokerName(), "queue_id", q.getQueueId());
    }

    /** The queues as JSON objects, in a stable order, so equal sets print equal lines. */
    static List<Map<String, Object>> queues(Collection<MessageQueue> qs) {
        List<MessageQueue> sorted = new ArrayList<>(qs);
        sorted.sort(QUEUE_ORDER);
        List<Map<String, Object>> out = new ArrayList<>();
        for (MessageQueue q : sorted) out.add(queue(q));
        return out;
    }
}
