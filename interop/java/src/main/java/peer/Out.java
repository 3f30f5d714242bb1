package peer;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.serializer.SerializerFeature;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The JSON-lines channel to the test: one object per line on the real stdout, flushed at once.
 *
 * <p>{@link #init()} takes the process's stdout for itself and points {@code System.out} at stderr,
 * so nothing else in the JVM (a library printing a banner, a logger falling back to the console)
 * can put a line into the stream the test parses.
 */
final class Out {
    private static final SerializerFeature[] FEATURES = {
        // Absent values stay visible as null, so every line of a kind has the same keys.
        SerializerFeature.WriteMapNullValue,
        // fastjson would otherwise write a repeated object as {"$ref": ...}.
        SerializerFeature.DisableCircularReferenceDetect,
    };

    private static PrintStream out;
    private static boolean closed;

    private Out() {}

    static synchronized void init() {
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
    }

    /** Writes one line, unless the run's final line was already written. */
    static synchronized void line(Map<String, Object> obj) {
        if (closed) return;
        out.print(JSON.toJSONString(obj, FEATURES));
        out.print('\n');
        out.flush();
    }

    /**
     * Writes the run's final line; later lines are dropped. A consume thread of the Java client can
     * still be running after shutdown() returned, and its delivery must not appear after "done".
     */
    static synchronized void last(Map<String, Object> obj) {
        line(obj);
        closed = true;
    }

    static synchronized boolean isClosed() {
        return closed;
    }

    /** An ordered JSON object from key, value pairs. */
    static Map<String, Object> obj(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }
}
