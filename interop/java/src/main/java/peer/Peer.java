package peer;

import java.io.File;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;

/**
 * The Java peer: Apache RocketMQ's own Java client driven from the command line, for the Rust
 * client's interoperation tests. Output the tests read is JSON lines on stdout (see {@link Out});
 * diagnostics go to stderr. Exit status: 0 when the subcommand reached its goal, 1 on an error or
 * a missed goal, 2 on a usage error, 124 when the hard time limit stopped a hung run.
 */
public final class Peer {
    static final String USAGE = String.join("\n",
        "usage: peer.Peer SUBCOMMAND [--namesrv ADDR] [--client-log DIR] [--timeout-s S]",
        "          [--access-key AK --secret-key SK] [--namespace NS]",
        "          [--tls] [--tls-ca FILE] [--tls-cert FILE --tls-key FILE] [OPTIONS]",
        "  (--namesrv defaults to $NAMESRV_ADDR; --timeout-s to 60; --client-log sets rocketmq.client.logRoot;",
        "  --access-key/--secret-key sign every request with AclClientRPCHook; refusals print \"refused\" lines;",
        "  --namespace sets ClientConfig.namespace on produce and consume;",
        "  --tls connects with TLS, trusting any server; --tls-ca FILE (implies --tls) checks the server's",
        "  certificate against FILE; --tls-cert/--tls-key (PEM, PKCS#8 key) present a client certificate)",
        "",
        "  produce --topic T --count N [--group PG] [--instance NAME] [--tag TAG] [--keys PREFIX]",
        "          [--prop k=v]... [--body TEMPLATE] [--body-size BYTES] [--batch B]",
        "          [--delay-level L] [--sharding-keys K] [--send-timeout-ms MS]",
        "  consume --group G --topic T [--expr EXPR | --sql EXPR] [--mode concurrent|orderly]",
        "          [--strategy averagely|consistent-hash] [--from first|last|timestamp:MS]",
        "          [--broadcasting [--offset-dir DIR]] [--reconsume-later N] [--always-fail]",
        "          [--retry-delay-level L] [--max-reconsume-times N] [--count N] [--idle-exit S]",
        "          [--duration-s S] [--instance NAME] [--rebalance-interval-ms MS]",
        "  lite-pull --group G --topic T [--expr EXPR] [--from first|last|timestamp:MS] [--count N]",
        "          [--idle-exit S] [--duration-s S] [--instance NAME] [--rebalance-interval-ms MS]",
        "  admin reset-offset --group G --topic T --timestamp MS [--force]",
        "  admin clients --group G [--min-clients N] [--max-clients N]",
        "  admin running-info --group G --client-id C [--jstack]",
        "  admin consume-directly --group G --client-id C --msg-id M [--topic T]",
        "  admin rebalance --group G",
        "  admin create-topic --topic T [--queues N] [--cluster C]   (on every master; waits for the route)",
        "  (admin subcommands also take --rpc-timeout-ms MS, default 10000)",
        "  bench --mode push|lite-pull --group G --topic T --count N [--pull-batch-size B]",
        "          [--consume-batch-size B] [--consume-threads T]   (one e2e child report line)",
        "  trace-read [--topic T] [--group G] [--idle-exit S]   (RMQ_SYS_TRACE_TOPIC decoded by TraceDataEncoder)");

    private Peer() {}

    public static void main(String[] argv) {
        Out.init();
        int code;
        try {
            code = run(Arrays.asList(argv));
        } catch (Args.UsageException e) {
            System.err.println("java-peer: " + e.getMessage());
            System.err.println(USAGE);
            code = 2;
        } catch (Throwable t) {
            System.err.println("java-peer: failed: " + t);
            t.printStackTrace(System.err);
            Out.last(failure(t));
            code = 1;
        }
        System.err.flush();
        // The client's threads are not all daemons; exit rather than wait for them.
        System.exit(code);
    }

    /**
     * The final line of a failed run: {"event":"error","error","code","remark","message"}, where
     * code and remark are the broker's answer (the first MQBrokerException on the cause chain, else
     * an MQClientException's response code), null when there was none.
     */
    static Map<String, Object> failure(Throwable t) {
        Integer code = null;
        String remark = null;
        for (Throwable c = t; c != null && c.getCause() != c; c = c.getCause()) {
            if (c instanceof MQBrokerException) {
                code = ((MQBrokerException) c).getResponseCode();
                remark = ((MQBrokerException) c).getErrorMessage();
                break;
            }
            if (code == null && c instanceof MQClientException && ((MQClientException) c).getResponseCode() > 0) {
                code = ((MQClientException) c).getResponseCode();
                remark = ((MQClientException) c).getErrorMessage();
            }
        }
        return Out.obj("event", "error", "error", t.getClass().getSimpleName(), "code", code, "remark", remark,
            "message", String.valueOf(t.getMessage()));
    }

    private static int run(List<String> argv) throws Exception {
        if (argv.isEmpty()) throw new Args.UsageException("no subcommand");
        String cmd = argv.get(0);
        List<String> rest = argv.subList(1, argv.size());
        switch (cmd) {
            case "produce":
                return new Produce(rest).run();
            case "consume":
                return new Consume(rest).run();
            case "lite-pull":
                return new LitePull(rest).run();
            case "admin":
                return Admin.run(rest);
            case "bench":
                return new Bench(rest).run();
            case "trace-read":
                return new Trace(rest).run();
            case "help":
            case "--help":
            case "-h":
                System.err.println(USAGE);
                return 0;
            default:
                throw new Args.UsageException("unknown subcommand " + cmd);
        }
    }

    /**
     * Settings the Java client reads once, in static initialisers, from system properties: they
     * must be set before the first client class is used, which is why every subcommand calls this
     * right after parsing its options.
     */
    static void configureClient(Args a) {
        String logRoot = a.str("client-log", null);
        if (logRoot == null) logRoot = System.getProperty("rocketmq.client.logRoot");
        if (logRoot == null) {
            // Not the client's default ~/logs/rocketmqlogs: a test run should not write to $HOME.
            logRoot = System.getProperty("java.io.tmpdir") + File.separator + "rmq-java-peer-logs";
        }
        new File(logRoot).mkdirs();
        System.setProperty("rocketmq.client.logRoot", logRoot);
        // The client's inner logger writes the file; SLF4J would send it to logback (stderr).
        System.setProperty("rocketmq.client.logUseSlf4j", "false");
        // Before any client exists: ClientConfig.useTLS starts as TlsSystemConfig.tlsEnable.
        Tls.configure(a);
    }

    /**
     * A last-resort bound on the run: a client call that hangs (a shutdown waiting on a dead
     * broker, say) must not keep the test waiting forever. Halts without running shutdown hooks.
     */
    static void watchdog(long afterMs, String what) {
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(afterMs);
            } catch (InterruptedException e) {
                return;
            }
            System.err.println("java-peer: " + what + ": hard time limit of " + afterMs + " ms reached, halting");
            System.err.flush();
            Runtime.getRuntime().halt(124);
        }, "java-peer-watchdog");
        t.setDaemon(true);
        t.start();
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }
}
