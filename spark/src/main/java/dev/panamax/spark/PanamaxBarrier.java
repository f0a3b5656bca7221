package dev.panamax.spark;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.CommunicatorBuilder;
import dev.panamax.collectives.LaunchConfig;
import dev.panamax.collectives.Panamax;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.ml.shared.SharedReduction;
import dev.panamax.ml.shared.SharedVariable;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.BarrierTaskInfo;
import org.apache.spark.api.java.JavaRDD;
import scala.Function1;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Panamax collectives inside a Spark barrier stage ({@code rdd.barrier().mapPartitions(...)}),
 * where all tasks run at once and can meet through their {@link BarrierTaskContext}.
 *
 * <p>The tasks rendezvous without any configuration: the task of partition 0 picks a free port on
 * its host and a random job secret, and the context's {@code allGather} hands both to every task;
 * the task's partition id is its rank, and the host of partition 0 (from
 * {@code getTaskInfos()}) is the master address. Each call that connects is collective over the
 * stage: every task of the stage makes it, in the same order.
 *
 * <pre>{@code
 * JavaRDD<double[]> sums = PanamaxBarrier.mapPartitions(gradients, (ctx, it) -> {
 *     double[] g = it.next();
 *     PanamaxBarrier.allReduce(ctx, g, ReduceOp.SUM); // g is now the sum over all partitions
 *     return List.of(g).iterator();
 * });
 * }</pre>
 *
 * <p>Spark reaches into the JDK's internals: run it with the {@code --add-opens} options of Spark's
 * launcher (see {@code docs/guide/ml-spark.md}).
 */
public final class PanamaxBarrier {
    /** Task attempt id to the communicator of {@link #communicator}. */
    private static final Map<Long, Communicator> TASK_COMMUNICATORS = new ConcurrentHashMap<>();
    /** Task attempt id to the executor-process group that task belongs to ({@link #sharedVariable}). */
    private static final Map<Long, SharedProcessGroup> TASK_GROUPS = new ConcurrentHashMap<>();

    private PanamaxBarrier() {
    }

    /** A partition function for {@link #mapPartitions} that is given the task's barrier context. */
    @FunctionalInterface
    public interface BarrierFunction<T, U> extends Serializable {
        Iterator<U> call(BarrierTaskContext context, Iterator<T> partition) throws Exception;
    }

    /**
     * Runs {@code fn} on every partition of {@code rdd} as one barrier stage: the Java form of
     * {@code rdd.rdd().barrier().mapPartitions(...)}. All partitions must fit in the cluster's
     * task slots at once.
     */
    public static <T, U> JavaRDD<U> mapPartitions(JavaRDD<T> rdd, BarrierFunction<T, U> fn) {
        Objects.requireNonNull(fn, "fn");
        @SuppressWarnings("unchecked")
        ClassTag<U> tag = (ClassTag<U>) ClassTag$.MODULE$.AnyRef();
        Function1<scala.collection.Iterator<T>, scala.collection.Iterator<U>> f = new PartitionFunction<>(fn);
        return JavaRDD.fromRDD(rdd.rdd().barrier().mapPartitions(f, false, tag), tag);
    }

    /**
     * A builder for a communicator whose ranks are the stage's tasks (rank = partition id), with
     * the rendezvous address, port and secret already set; the caller may set a timeout, a
     * transport and so on, and then connects. Collective over the stage (one {@code allGather}).
     */
    public static CommunicatorBuilder builder(BarrierTaskContext context) {
        Rendezvous r = Rendezvous.exchange(context);
        int rank = context.partitionId();
        return Panamax.builder()
                .config(new LaunchConfig(rank, r.hosts.length, r.localRank(rank), r.hosts[0], r.port))
                .secret(r.secret);
    }

    /**
     * The communicator of this task, connected on the first call (collective over the stage) and
     * closed when the task ends; later calls in the same task return it again.
     */
    public static Communicator communicator(BarrierTaskContext context) {
        long id = context.taskAttemptId();
        Communicator c = TASK_COMMUNICATORS.get(id);
        if (c == null) {
            c = builder(context).connect();
            TASK_COMMUNICATORS.put(id, c);
            context.addTaskCompletionListener(ctx -> {
                Communicator done = TASK_COMMUNICATORS.remove(id);
                if (done != null) {
                    done.close();
                }
            });
        }
        return c;
    }

    /** In-place all-reduce of {@code data} over the stage's tasks, on {@link #communicator}. */
    public static void allReduce(BarrierTaskContext context, double[] data, ReduceOp op) {
        allReduce(communicator(context), MemorySegment.ofArray(data), data.length, DataType.FLOAT64, op);
    }

    /** In-place all-reduce of {@code data} over the stage's tasks, on {@link #communicator}. */
    public static void allReduce(BarrierTaskContext context, float[] data, ReduceOp op) {
        allReduce(communicator(context), MemorySegment.ofArray(data), data.length, DataType.FLOAT32, op);
    }

    private static void allReduce(Communicator c, MemorySegment data, long count, DataType type, ReduceOp op) {
        // Through the communicator's shared memory, which same-host peers read without staging copies.
        MemorySegment buffer = c.allocate(Math.max(1, data.byteSize()));
        try {
            MemorySegment.copy(data, 0, buffer, 0, data.byteSize());
            c.allReduce(buffer, count, type, op);
            MemorySegment.copy(buffer, 0, data, 0, data.byteSize());
        } finally {
            c.free(buffer);
        }
    }

    /**
     * The shared variable {@code key} of this task's executor process ({@link SharedVariable}
     * {@code init}): the stage's tasks are grouped by the executor JVM they run in, each group is
     * one rank of a communicator connected for the stage, and its task count is the variable's
     * {@code numTasks}. Each task then commits once per round and gets the sum (or other
     * reduction) over every task of the stage, reduced first within each executor. The first call
     * of a task is collective over the stage; the variables and their communicator close when the
     * executor's last task of the stage ends.
     */
    public static SharedVariable sharedVariable(BarrierTaskContext context, String key, SharedReduction reduction) {
        long id = context.taskAttemptId();
        SharedProcessGroup group = TASK_GROUPS.get(id);
        if (group == null) {
            group = SharedProcessGroup.join(context, Rendezvous.exchange(context));
            TASK_GROUPS.put(id, group);
            SharedProcessGroup joined = group;
            context.addTaskCompletionListener(ctx -> {
                TASK_GROUPS.remove(id);
                joined.leave();
            });
        }
        SharedVariable v = SharedVariable.init(group.communicator(), key, group.tasksHere(), reduction);
        group.track(key);
        return v;
    }

    /** What the tasks of a stage tell each other to connect. */
    record Rendezvous(String[] hosts, String[] processes, int port, String secret) {
        /** Identifies this JVM among the executors. */
        static final String PROCESS_ID = randomHex(8);

        /** One allGather: each task sends its process id; partition 0 also a free port and a secret. */
        static Rendezvous exchange(BarrierTaskContext context) {
            BarrierTaskInfo[] infos = context.getTaskInfos();
            String[] hosts = new String[infos.length];
            for (int i = 0; i < infos.length; i++) {
                hosts[i] = host(infos[i].address());
            }
            String message = PROCESS_ID;
            if (context.partitionId() == 0) {
                message += " " + freePort(hosts[0]) + " " + randomHex(16);
            }
            String[] all = context.allGather(message);
            String[] processes = new String[all.length];
            for (int i = 0; i < all.length; i++) {
                processes[i] = all[i].split(" ")[0];
            }
            String[] first = all[0].split(" ");
            return new Rendezvous(hosts, processes, Integer.parseInt(first[1]), first[2]);
        }

        static String randomHex(int bytes) {
            byte[] b = new byte[bytes];
            new SecureRandom().nextBytes(b);
            return HexFormat.of().formatHex(b);
        }

        /** The tasks before {@code rank} on its host. */
        int localRank(int rank) {
            int n = 0;
            for (int i = 0; i < rank; i++) {
                n += hosts[i].equals(hosts[rank]) ? 1 : 0;
            }
            return n;
        }

        /** {@code host:port} or {@code [v6]:port} to the host. */
        static String host(String address) {
            int colon = address.lastIndexOf(':');
            String h = colon > 0 ? address.substring(0, colon) : address;
            return h.startsWith("[") && h.endsWith("]") ? h.substring(1, h.length() - 1) : h;
        }

        /** A port free now on {@code host}; the rendezvous store binds it moments later. */
        static int freePort(String host) {
            try (ServerSocket s = new ServerSocket()) {
                s.bind(new InetSocketAddress(InetAddress.getByName(host), 0));
                return s.getLocalPort();
            } catch (IOException e) {
                throw new UncheckedIOException("no free port on " + host + " for the Panamax rendezvous", e);
            }
        }
    }

    /** Adapts a {@link BarrierFunction} to the Scala function Spark takes. */
    private record PartitionFunction<T, U>(BarrierFunction<T, U> fn)
            implements Function1<scala.collection.Iterator<T>, scala.collection.Iterator<U>>, Serializable {
        @Override
        public scala.collection.Iterator<U> apply(scala.collection.Iterator<T> partition) {
            try {
                return CollectionConverters.asScala(fn.call(BarrierTaskContext.get(),
                        CollectionConverters.asJava(partition)));
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IllegalStateException("barrier task of partition " + BarrierTaskContext.get().partitionId()
                        + " failed", e);
            }
        }
    }
}
