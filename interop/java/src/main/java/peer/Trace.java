package peer;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.trace.TraceBean;
import org.apache.rocketmq.client.trace.TraceContext;
import org.apache.rocketmq.client.trace.TraceDataEncoder;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * {@code trace-read}: reads a trace topic from its first message and decodes every record with
 * the Java client's own {@code TraceDataEncoder.decoderFromTraceDataString}, one "trace" line per
 * traced message ({@code TraceBean}) of each record ({@code TraceContext}), with the trace
 * message's keys ("undecodable" for a message the decoder throws on); ends with "done" once nothing arrived for --idle-exit seconds (default 3).
 */
final class Trace {
    private static final long POLL_MS = 200;

    private final Args a;

    Trace(List<String> argv) {
        a = new Args().value("topic", "group", "idle-exit").parse(argv);
    }

    int run() throws Exception {
        String namesrv = a.namesrv();
        Peer.configureClient(a);
        Peer.watchdog(a.integer("timeout-s", 60) * 1000L, "trace-read");
        String topic = a.str("topic", "RMQ_SYS_TRACE_TOPIC");
        String group = a.str("group", "java-peer-trace-" + System.nanoTime());
        long idleMs = a.integer("idle-exit", 3) * 1000L;

        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer(group, Acl.hook(a));
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setPollTimeoutMillis(POLL_MS);
        consumer.subscribe(topic, "*");
        consumer.start();
        int messages = 0;
        int records = 0;
        long last = System.currentTimeMillis();
        try {
            while (System.currentTimeMillis() - last < idleMs) {
                List<MessageExt> msgs = consumer.poll(POLL_MS);
                if (!msgs.isEmpty()) last = System.currentTimeMillis();
                for (MessageExt m : msgs) {
                    messages++;
                    String data = new String(m.getBody(), StandardCharsets.UTF_8);
                    List<TraceContext> contexts;
                    try {
                        contexts = TraceDataEncoder.decoderFromTraceDataString(data);
                    } catch (RuntimeException e) {
                        // Java's decoder throws on a record it cannot read; say so and go on.
                        Out.line(Out.obj("event", "undecodable", "msg_id", m.getMsgId(), "keys", m.getKeys(),
                            "error", e.toString()));
                        continue;
                    }
                    for (TraceContext ctx : contexts) {
                        for (TraceBean bean : ctx.getTraceBeans()) {
                            records++;
                            Out.line(Out.obj("event", "trace", "type", ctx.getTraceType().name(),
                                "group", ctx.getGroupName(), "request_id", ctx.getRequestId(),
                                "region", ctx.getRegionId(), "timestamp", ctx.getTimeStamp(),
                                "cost_ms", ctx.getCostTime(), "success", ctx.isSuccess(),
                                "context_code", ctx.getContextCode(), "topic", bean.getTopic(),
                                "msg_id", bean.getMsgId(), "keys", bean.getKeys(),
                                "retry_times", bean.getRetryTimes(), "message_keys", m.getKeys()));
                        }
                    }
                }
            }
        } finally {
            consumer.shutdown();
        }
        Out.last(Out.obj("event", "done", "messages", messages, "records", records));
        return 0;
    }
}
