package peer;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The options of one subcommand: {@code --name value}, {@code --name=value} and bare flags.
 *
 * <p>Each subcommand declares what it accepts, so a misspelt or misplaced option is a usage error
 * instead of being ignored: a test that passes {@code --count} to a command that does not know it
 * should fail loudly, not wait for its timeout.
 */
final class Args {
    /** How an option is written. */
    enum Kind { VALUE, FLAG, MULTI }

    /** Thrown for anything wrong on the command line; the program prints usage and exits 2. */
    static final class UsageException extends RuntimeException {
        UsageException(String message) {
            super(message);
        }
    }

    private final Map<String, Kind> spec = new LinkedHashMap<>();
    private final Map<String, List<String>> values = new HashMap<>();

    /** Options every subcommand takes. */
    Args() {
        spec.put("namesrv", Kind.VALUE);
        spec.put("client-log", Kind.VALUE);
        spec.put("timeout-s", Kind.VALUE);
        // ACL credentials (see Acl): every subcommand's clients sign with them.
        spec.put("access-key", Kind.VALUE);
        spec.put("secret-key", Kind.VALUE);
        // ClientConfig.setNamespace for the run's producer and consumers.
        spec.put("namespace", Kind.VALUE);
        // TLS (see Tls): every subcommand's clients connect with it.
        spec.put("tls", Kind.FLAG);
        spec.put("tls-ca", Kind.VALUE);
        spec.put("tls-cert", Kind.VALUE);
        spec.put("tls-key", Kind.VALUE);
    }

    Args value(String... names) {
        for (String n : names) spec.put(n, Kind.VALUE);
        return this;
    }

    Args flag(String... names) {
        for (String n : names) spec.put(n, Kind.FLAG);
        return this;
    }

    Args multi(String... names) {
        for (String n : names) spec.put(n, Kind.MULTI);
        return this;
    }

    Args parse(List<String> argv) {
        for (int i = 0; i < argv.size(); i++) {
            String a = argv.get(i);
            if (!a.startsWith("--") || a.length() == 2) {
                throw new UsageException("unexpected argument: " + a);
            }
            String name = a.substring(2);
            String inline = null;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                inline = name.substring(eq + 1);
                name = name.substring(0, eq);
            }
            Kind kind = spec.get(name);
            if (kind == null) {
                throw new UsageException("unknown option --" + name);
            }
            String v;
            if (kind == Kind.FLAG) {
                if (inline != null) throw new UsageException("--" + name + " takes no value");
                v = "";
            } else if (inline != null) {
                v = inline;
            } else {
                if (i + 1 >= argv.size()) throw new UsageException("--" + name + " needs a value");
                v = argv.get(++i);
            }
            List<String> list = values.computeIfAbsent(name, k -> new ArrayList<>());
            if (kind != Kind.MULTI && !list.isEmpty()) {
                throw new UsageException("--" + name + " given twice");
            }
            list.add(v);
        }
        return this;
    }

    boolean has(String name) {
        return values.containsKey(name);
    }

    String str(String name, String dflt) {
        List<String> l = values.get(name);
        return l == null ? dflt : l.get(0);
    }

    String required(String name) {
        String v = str(name, null);
        if (v == null) throw new UsageException("--" + name + " is required");
        return v;
    }

    List<String> all(String name) {
        return values.getOrDefault(name, List.of());
    }

    Long lng(String name, Long dflt) {
        String v = str(name, null);
        if (v == null) return dflt;
        try {
            return Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            throw new UsageException("--" + name + " wants an integer, got " + v);
        }
    }

    Integer integer(String name, Integer dflt) {
        Long v = lng(name, dflt == null ? null : dflt.longValue());
        if (v == null) return null;
        if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
            throw new UsageException("--" + name + " is out of range: " + v);
        }
        return v.intValue();
    }

    /** A non-negative integer option (counts, sizes, seconds). */
    Integer count(String name, Integer dflt) {
        Integer v = integer(name, dflt);
        if (v != null && v < 0) throw new UsageException("--" + name + " must not be negative");
        return v;
    }

    /** A strictly positive integer option. */
    Integer positive(String name, Integer dflt) {
        Integer v = integer(name, dflt);
        if (v != null && v <= 0) throw new UsageException("--" + name + " must be positive");
        return v;
    }

    /** The name server: --namesrv, else $NAMESRV_ADDR. */
    String namesrv() {
        String v = str("namesrv", System.getenv("NAMESRV_ADDR"));
        if (v == null || v.isBlank()) {
            throw new UsageException("no name server: pass --namesrv ADDR or set NAMESRV_ADDR");
        }
        return v;
    }

    /** --timeout-s in milliseconds (default 60 s). */
    long timeoutMs() {
        return positive("timeout-s", 60) * 1000L;
    }
}
