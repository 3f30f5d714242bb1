package peer;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * {@code bench}: drains a backlog as fast as the Java client goes, for the Rust client's {@code e2e}
 * benchmark, and prints one line in that program's child report shape:
 * {@code {"messages","bytes","seconds","cpu_seconds","peak_rss_kb"}}. The clock and the CPU count
 * start just before {@code start()} and stop when the last message of {@code --count} was handled,
 * as the Rust children measure theirs; the JVM's own start is outside both. Handlers only count.
 */
final class Bench {
    private final Args a;

    Bench(List<String> argv) {
        a = new Args()
            .value("mode", "group", "topic", "count", "pull-batch-size", "consume-batch-size", "consume-threads")
            .parse(argv);
    }

    int run() throws Exception {
        String namesrv = a.namesrv();
        Peer.configureClient(a);
        String mode = a.str("mode", "push");
        String group = a.required("group");
        String topic = a.required("topic");
        long total = a.positive("count", null);
        Peer.watchdog(a.timeoutMs() + 30_000, "bench");

        AtomicLong messages = new AtomicLong();
        AtomicLong bytes = new AtomicLong();
        CountDownLatch done = new CountDownLatch(1);
        double cpuBefore;
        long started;
        switch (mode) {
            case "push": {
                DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group, Acl.hook(a),
                    new AllocateMessageQueueAveragely());
                consumer.setNamesrvAddr(namesrv);
                consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
                if (a.has("pull-batch-size")) consumer.setPullBatchSize(a.positive("pull-batch-size", null));
                if (a.has("consume-batch-size")) {
                    consumer.setConsumeMessageBatchMaxSize(a.positive("consume-batch-size", null));
                }
                if (a.has("consume-threads")) {
                    int threads = a.positive("consume-threads", null);
                    consumer.setConsumeThreadMin(threads);
                    consumer.setConsumeThreadMax(threads);
                }
                consumer.subscribe(topic, "*");
                consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                    count(msgs, messages, bytes, total, done);
                    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                });
                cpuBefore = cpuSeconds();
                started = System.nanoTime();
                consumer.start();
                await(done, a.timeoutMs());
                report(messages, bytes, started, cpuBefore);
                consumer.shutdown();
                return 0;
            }
            case "lite-pull": {
                DefaultLitePullConsumer consumer = new DefaultLitePullConsumer(group, Acl.hook(a));
                consumer.setNamesrvAddr(namesrv);
                consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
                if (a.has("pull-batch-size")) consumer.setPullBatchSize(a.positive("pull-batch-size", null));
                consumer.subscribe(topic, "*");
                cpuBefore = cpuSeconds();
                started = System.nanoTime();
                consumer.start();
                long deadline = System.currentTimeMillis() + a.timeoutMs();
                // poll() with the default auto-commit, as an application would run it.
                while (done.getCount() > 0) {
                    if (System.currentTimeMillis() > deadline) {
                        throw new IllegalStateException("only " + messages.get() + " of " + total
                            + " messages within the timeout");
                    }
                    count(consumer.poll(), messages, bytes, total, done);
                }
                report(messages, bytes, started, cpuBefore);
                consumer.shutdown();
                return 0;
            }
            default:
                throw new Args.UsageException("--mode is push or lite-pull, not " + mode);
        }
    }

    private static void count(List<MessageExt> msgs, AtomicLong messages, AtomicLong bytes, long total,
                              CountDownLatch done) {
        long size = 0;
        for (MessageExt m : msgs) size += m.getBody().length;
        bytes.addAndGet(size);
        if (messages.addAndGet(msgs.size()) >= total) done.countDown();
    }

    private static void await(CountDownLatch done, long timeoutMs) throws InterruptedException {
        if (!done.await(timeoutMs, TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("the backlog was not drained within " + timeoutMs + " ms");
        }
    }

    private static void report(AtomicLong messages, AtomicLong bytes, long started, double cpuBefore)
            throws IOException {
        double seconds = (System.nanoTime() - started) / 1e9;
        Out.line(Out.obj("messages", messages.get(), "bytes", bytes.get(), "seconds", seconds,
            "cpu_seconds", cpuSeconds() - cpuBefore, "peak_rss_kb", peakRssKb()));
    }

    /** User + system CPU time of the whole process (every JVM thread, GC and JIT included). */
    private static double cpuSeconds() throws IOException {
        String stat = new String(Files.readAllBytes(Paths.get("/proc/self/stat")), StandardCharsets.US_ASCII);
        // Fields after the command name, which is in parentheses and may hold spaces.
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after the name, in
        // clock ticks of 1/100 s (USER_HZ on Linux).
        long ticks = Long.parseLong(f[11]) + Long.parseLong(f[12]);
        return ticks / 100.0;
    }

    /** The process's peak resident set (VmHWM), in KiB. */
    private static long peakRssKb() throws IOException {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"), StandardCharsets.US_ASCII)) {
            if (line.startsWith("VmHWM:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        return 0;
    }
}
