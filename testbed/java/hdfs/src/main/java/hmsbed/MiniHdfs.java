package hmsbed;

import java.io.File;
import java.io.FileInputStream;
import java.io.InputStream;
import java.util.Properties;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.security.UserGroupInformation;

/**
 * Starts one NameNode and one DataNode of Hadoop's mini cluster on fixed loopback ports (testbed/hdfs.go).
 *
 * <p>Usage: MiniHdfs CONF.properties BASEDIR NN_RPC_PORT NN_HTTP_PORT. Every property becomes a Hadoop setting;
 * the DataNode's ports are dfs.datanode.address / .http.address / .ipc.address among them. When
 * hmsbed.login.principal and hmsbed.login.keytab are set (a Kerberized cluster), this process logs in with them
 * before the cluster starts: the mini cluster's own checks are HDFS calls too. -Dhmsbed.format=false restarts a
 * cluster on its existing data. Prints HMSBED-HDFS-READY once the
 * DataNode has registered, then runs until it is killed.
 */
public final class MiniHdfs {
    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: MiniHdfs CONF.properties BASEDIR NN_RPC_PORT NN_HTTP_PORT");
            System.exit(2);
        }
        Properties props = new Properties();
        try (InputStream in = new FileInputStream(args[0])) {
            props.load(in);
        }
        Configuration conf = new HdfsConfiguration();
        String principal = null, keytab = null;
        for (String k : props.stringPropertyNames()) {
            String v = props.getProperty(k);
            switch (k) {
                case "hmsbed.login.principal": principal = v; break;
                case "hmsbed.login.keytab": keytab = v; break;
                default: conf.set(k, v);
            }
        }
        if (principal != null) {
            UserGroupInformation.setConfiguration(conf);
            UserGroupInformation.loginUserFromKeytab(principal, keytab);
        }
        MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf, new File(args[1]))
                .nameNodePort(Integer.parseInt(args[2]))
                .nameNodeHttpPort(Integer.parseInt(args[3]))
                .numDataNodes(1)
                .checkDataNodeAddrConfig(true)
                .format(!"false".equals(System.getProperty("hmsbed.format")))
                .build();
        cluster.waitActive();
        Runtime.getRuntime().addShutdownHook(new Thread(cluster::shutdown));
        System.out.println("HMSBED-HDFS-READY");
        System.out.flush();
        Thread.currentThread().join();
    }
}
