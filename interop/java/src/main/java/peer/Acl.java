package peer;

import java.util.HashSet;
import java.util.Set;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * {@code --access-key AK --secret-key SK}: every client of the run signs its requests with Apache's
 * {@code AclClientRPCHook(new SessionCredentials(ak, sk))}, as a Java application does against a
 * broker that enforces ACL. Without them requests go unsigned.
 *
 * <p>Either way the hook also reports refusals, once each, as
 * {@code {"event":"refused","request_code","code","remark","addr"}} lines: NO_PERMISSION (16, what
 * 5.x and the Rust broker answer) and SYSTEM_ERROR (1) whose remark is an AclException (what 4.9
 * answers). The Java client runs the after-response hook for synchronous requests only
 * (sends, heartbeats, offset queries, admin calls), not for its asynchronous pulls.
 */
final class Acl {
    private static final int SYSTEM_ERROR = 1;
    private static final int NO_PERMISSION = 16;

    private Acl() {}

    /** The hook for the run's clients; a usage error when only one of the two keys is given. */
    static RPCHook hook(Args a) {
        String ak = a.str("access-key", null);
        String sk = a.str("secret-key", null);
        if ((ak == null) != (sk == null)) {
            throw new Args.UsageException("--access-key and --secret-key go together");
        }
        RPCHook signer = ak == null ? null : new AclClientRPCHook(new SessionCredentials(ak, sk));
        Set<String> seen = new HashSet<>();
        return new RPCHook() {
            @Override
            public void doBeforeRequest(String remoteAddr, RemotingCommand request) {
                if (signer != null) signer.doBeforeRequest(remoteAddr, request);
            }

            @Override
            public void doAfterResponse(String remoteAddr, RemotingCommand request, RemotingCommand response) {
                if (response == null || !isRefusal(response)) return;
                String key = request.getCode() + "/" + response.getCode() + "/" + response.getRemark();
                synchronized (seen) {
                    if (!seen.add(key)) return;
                }
                Out.line(Out.obj(
                    "event", "refused",
                    "request_code", request.getCode(),
                    "code", response.getCode(),
                    "remark", response.getRemark(),
                    "addr", remoteAddr));
            }
        };
    }

    static boolean isRefusal(RemotingCommand response) {
        if (response.getCode() == NO_PERMISSION) return true;
        String remark = response.getRemark();
        return response.getCode() == SYSTEM_ERROR && remark != null && remark.contains("AclException");
    }
}
