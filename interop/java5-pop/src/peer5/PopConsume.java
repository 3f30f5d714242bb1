package peer5;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Apache RocketMQ 5.x's own push consumer in pop mode (client rebalance off: it follows the
 * broker's assignment and pops when the group's request mode on the broker is POP), printing
 * one JSON line per message it consumed, for the interop test with our pop consumer in the
 * same group.
 *
 * <pre>java -cp classes:lib/* peer5.PopConsume NAMESRV GROUP TOPIC IDLE_EXIT_SECONDS</pre>
 *
 * Lines: {"event":"started"}, then {"event":"message","body":..,"queue_id":..,
 * "queue_offset":..,"reconsume_times":..} per message, then {"event":"done","count":N} once
 * IDLE_EXIT_SECONDS passed without a message (after at least one arrived, or after 60 s).
 */
public final class PopConsume {
    private PopConsume() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: PopConsume NAMESRV GROUP TOPIC IDLE_EXIT_SECONDS");
            System.exit(2);
        }
        String namesrv = args[0];
        String group = args[1];
        String topic = args[2];
        long idleMillis = TimeUnit.SECONDS.toMillis(Long.parseLong(args[3]));

        AtomicInteger count = new AtomicInteger();
        AtomicLong last = new AtomicLong(System.currentTimeMillis());
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("java-pop-" + ProcessHandle.current().pid());
        consumer.setClientRebalance(false);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        // One message per pop: the Rust broker 1.0 writes a pop answer's msgOffsetInfo with `;`
        // between the offsets of one queue, which Java's ExtraInfoUtil.parseMsgOffsetInfo
        // refuses, and the batch is then lost to the group (that broker never revives it). A
        // single offset reads the same either way.
        consumer.setPopBatchNums(1);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
            for (MessageExt m : messages) {
                line("{\"event\":\"message\",\"body\":\"" + escape(new String(m.getBody()))
                    + "\",\"queue_id\":" + m.getQueueId() + ",\"queue_offset\":" + m.getQueueOffset()
                    + ",\"reconsume_times\":" + m.getReconsumeTimes() + "}");
                count.incrementAndGet();
                last.set(System.currentTimeMillis());
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        line("{\"event\":\"started\"}");
        long started = System.currentTimeMillis();
        while (true) {
            Thread.sleep(200);
            long now = System.currentTimeMillis();
            boolean idle = now - last.get() >= idleMillis;
            if ((count.get() > 0 && idle) || now - started >= 60_000 + idleMillis) {
                break;
            }
        }
        consumer.shutdown();
        line("{\"event\":\"done\",\"count\":" + count.get() + "}");
        System.exit(0);
    }

    private static synchronized void line(String json) {
        System.out.println(json);
        System.out.flush();
    }

    private static String escape(String text) {
        StringBuilder out = new StringBuilder(text.length());
        for (char c : text.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }
}
