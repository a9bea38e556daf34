import java.io.BufferedReader;
import java.io.FileReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.util.Date;
import java.util.HashSet;
import java.util.Set;

import org.apache.ranger.authorization.hadoop.config.RangerPluginConfig;
import org.apache.ranger.plugin.model.RangerPolicy;
import org.apache.ranger.plugin.policyengine.RangerAccessRequestImpl;
import org.apache.ranger.plugin.policyengine.RangerAccessResourceImpl;
import org.apache.ranger.plugin.policyengine.RangerAccessResult;
import org.apache.ranger.plugin.policyengine.RangerPluginContext;
import org.apache.ranger.plugin.policyengine.RangerPolicyEngineImpl;
import org.apache.ranger.plugin.policyengine.RangerPolicyEngineOptions;
import org.apache.ranger.authorization.utils.JsonUtils;
import org.apache.ranger.plugin.util.RangerRoles;
import org.apache.ranger.plugin.util.ServicePolicies;

/**
 * The oracle of hms-proxy's Ranger evaluator: Apache Ranger's own policy engine (ranger-plugins-common) decides
 * access requests against a policy set read from a file in the plugin's policy-cache format.
 *
 * Usage: RangerOracle [POLICIES.json ROLES.json|-]  (cases on standard input, answers on standard output)
 *
 * A line "@POLICIES.json<TAB>ROLES.json|-" loads another policy set (and roles) for the lines after it.
 * Each case line: user, groups (comma-separated), roles (comma-separated; empty = from the roles file), owner,
 * database, table, column, udf, access type, access time (epoch ms), separated by tabs; an empty field is absent.
 * Each answer line: "A" (allowed) or "D" (denied), a tab, the deciding policy id. Lines starting with '#' are
 * echoed as is (a generator may mark policy sets).
 */
public class RangerOracle {
    public static void main(String[] args) throws Exception {
        RangerPolicyEngineImpl engine = args.length >= 2 ? load(args[0], args[1]) : null;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty() || line.startsWith("#")) {
                out.println(line);
                continue;
            }
            if (line.startsWith("@")) {
                String[] f = line.substring(1).split("\t", -1);
                engine = load(f[0], f[1]);
                out.println("@");
                continue;
            }
            if (engine == null) {
                throw new IllegalStateException("a case before any policy set");
            }
            String[] f = line.split("\t", -1);
            if (f.length != 10) {
                throw new IllegalArgumentException("case line has " + f.length + " fields, want 10: " + line);
            }
            RangerAccessResourceImpl resource = new RangerAccessResourceImpl();
            set(resource, "database", f[4]);
            set(resource, "table", f[5]);
            set(resource, "column", f[6]);
            set(resource, "udf", f[7]);
            if (!f[3].isEmpty()) {
                resource.setOwnerUser(f[3]);
            }
            RangerAccessRequestImpl request = new RangerAccessRequestImpl(resource, f[8], f[0].isEmpty() ? null : f[0], split(f[1]), split(f[2]));
            request.setAccessTime(new Date(Long.parseLong(f[9])));
            RangerAccessResult result = engine.evaluatePolicies(request, RangerPolicy.POLICY_TYPE_ACCESS, null);
            out.println((result.getIsAllowed() ? "A" : "D") + "\t" + result.getPolicyId());
        }
        out.flush();
    }

    private static RangerPolicyEngineImpl load(String policiesFile, String rolesFile) throws Exception {
        ServicePolicies policies;
        try (Reader r = new FileReader(policiesFile, StandardCharsets.UTF_8)) {
            policies = JsonUtils.jsonToObject(r, ServicePolicies.class);
        }
        RangerRoles roles = null;
        if (!rolesFile.equals("-")) {
            try (Reader r = new FileReader(rolesFile, StandardCharsets.UTF_8)) {
                roles = JsonUtils.jsonToObject(r, RangerRoles.class);
            }
        }
        RangerPolicyEngineOptions options = new RangerPolicyEngineOptions();
        RangerPluginConfig config = new RangerPluginConfig("hive", policies.getServiceName(), "hms-proxy-oracle", null, null, options);
        return new RangerPolicyEngineImpl(policies, new RangerPluginContext(config), roles);
    }

    private static void set(RangerAccessResourceImpl resource, String name, String value) {
        if (!value.isEmpty()) {
            resource.setValue(name, value);
        }
    }

    private static Set<String> split(String csv) {
        Set<String> out = new HashSet<>();
        if (!csv.isEmpty()) {
            for (String s : csv.split(",", -1)) {
                out.add(s);
            }
        }
        return out;
    }
}
