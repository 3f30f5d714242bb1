package peer;

import java.io.File;
import org.apache.rocketmq.remoting.netty.TlsSystemConfig;

/**
 * {@code --tls}, {@code --tls-ca FILE}, {@code --tls-cert FILE --tls-key FILE}: every client of the
 * run connects with TLS, as a Java application does against a name server and brokers started with
 * {@code tls.server.mode=enforcing} ({@code scripts/broker start --tls}).
 *
 * <p>The Java client takes its TLS settings from {@link TlsSystemConfig}: static fields initialised
 * from system properties, then overridden by the properties file {@code tls.config.file} each time
 * {@code TlsHelper.buildSslContext} runs. {@code ClientConfig.useTLS} starts as
 * {@code tls.enable}, so setting it before the first client is built turns TLS on for all of
 * them (producer, consumers, admin, and the clients they make inside). What the options set:
 *
 * <ul>
 *   <li>{@code --tls} alone: {@code tls.enable=true} and nothing else, the client's default: test
 *       mode, which trusts any server certificate and presents none;
 *   <li>{@code --tls-ca FILE}: also {@code tls.test.mode.enable=false},
 *       {@code tls.client.authServer=true}, {@code tls.client.trustCertPath=FILE}: the server's
 *       certificate must chain to FILE (the Java client never checks the host name: Netty's
 *       handler is built without a peer host, so the JDK does no endpoint identification);
 *   <li>{@code --tls-cert FILE --tls-key FILE} (PEM; the key PKCS#8, unencrypted): also
 *       {@code tls.test.mode.enable=false} and {@code tls.client.certPath}/{@code keyPath}: mutual
 *       TLS. Without {@code --tls-ca} the server is then trusted blindly.
 * </ul>
 *
 * Each of the three implies {@code --tls}. Unless {@code -Dtls.config.file} is given (through
 * {@code RMQ_JAVA_PEER_OPTS}), no file is read, so a stray {@code /etc/rocketmq/tls.properties}
 * cannot change the run.
 */
final class Tls {
    private Tls() {}

    /** Applies the options; must run before the first client class is touched (see the caller). */
    static void configure(Args a) {
        String ca = a.str("tls-ca", null);
        String cert = a.str("tls-cert", null);
        String key = a.str("tls-key", null);
        if ((cert == null) != (key == null)) {
            throw new Args.UsageException("--tls-cert and --tls-key go together");
        }
        for (String f : new String[] {ca, cert, key}) {
            if (f != null && !new File(f).canRead()) throw new Args.UsageException("cannot read " + f);
        }
        if (!a.has("tls") && ca == null && cert == null) return;

        // The system properties first (read by TlsSystemConfig's static initialiser, should it run
        // only now), then the fields themselves (in case it already ran).
        set(TlsSystemConfig.TLS_ENABLE, "true");
        if (ca != null || cert != null) set(TlsSystemConfig.TLS_TEST_MODE_ENABLE, "false");
        if (ca != null) {
            set(TlsSystemConfig.TLS_CLIENT_AUTHSERVER, "true");
            set(TlsSystemConfig.TLS_CLIENT_TRUSTCERTPATH, ca);
        }
        if (cert != null) {
            set(TlsSystemConfig.TLS_CLIENT_CERTPATH, cert);
            set(TlsSystemConfig.TLS_CLIENT_KEYPATH, key);
        }
        boolean fileGiven = System.getProperty(TlsSystemConfig.TLS_CONFIG_FILE) != null;

        TlsSystemConfig.tlsEnable = true;
        if (ca != null || cert != null) TlsSystemConfig.tlsTestModeEnable = false;
        if (ca != null) {
            TlsSystemConfig.tlsClientAuthServer = true;
            TlsSystemConfig.tlsClientTrustCertPath = ca;
        }
        if (cert != null) {
            TlsSystemConfig.tlsClientCertPath = cert;
            TlsSystemConfig.tlsClientKeyPath = key;
        }
        // new File("").exists() is false: TlsHelper skips the file.
        if (!fileGiven) TlsSystemConfig.tlsConfigFile = "";
    }

    private static void set(String name, String value) {
        System.setProperty(name, value);
    }
}
