package dev.panamax.collectives.internal.observe;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.internal.config.Settings;
import dev.panamax.memory.concurrent.AdaptiveBackoffIdleStrategy.Counts;

import java.lang.management.ManagementFactory;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.AttributeNotFoundException;
import javax.management.DynamicMBean;
import javax.management.InstanceNotFoundException;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanInfo;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import javax.management.MalformedObjectNameException;
import javax.management.ReflectionException;

/**
 * The JMX view of one communicator, {@code dev.panamax:type=Communicator,rank=R,id=N} (N unique in
 * the JVM, so split communicators get their own), registered when the communicator is created and
 * unregistered when it is closed. Read-only attributes: {@code Rank}, {@code Size}, {@code Id},
 * {@code Transports}, {@code TimeoutSeconds}, {@code WindowBytes}, {@code Closed}, {@code InFlight} (the collective
 * in progress, its algorithm and stage, and the requests it has been waiting on and for how long;
 * empty when idle), and how its waits idled: {@code SpinNanos} (of the latest wait), {@code IdleWaits},
 * {@code WaitsServedSpinning}, {@code Spins}, {@code Yields}, {@code Parks}, {@code Sleeps}, {@code SleepsWoken},
 * {@code PreemptedSpins} and {@code CpuMoves} (totals so far). These are read racily from the running thread's plain
 * fields (see the runtime's progress loop): no cost on the collective, at worst a snapshot that
 * straddles two stages.
 *
 * <p>A dynamic MBean, so the JMX introspector needs no access to this (unexported) package.
 * {@code -Dpanamax.jmx=false} turns the registration off.
 */
public final class CommunicatorMBean implements DynamicMBean {
    private static final AtomicLong IDS = new AtomicLong();
    private static final System.Logger LOG = System.getLogger("dev.panamax.collectives");
    private static final boolean ENABLED = !"false".equalsIgnoreCase(Settings.JMX.value(Settings.JMX.defaultValue()));

    private static final MBeanInfo INFO = new MBeanInfo(CommunicatorMBean.class.getName(),
            "A Panamax communicator: its rank and size, its transports and the collective in progress",
            new MBeanAttributeInfo[] {
                    attribute("Rank", "int", "this rank in the communicator"),
                    attribute("Size", "int", "the number of ranks"),
                    attribute("Id", "long", "the id in the object name, unique in this JVM"),
                    attribute("Transports", "java.lang.String",
                            "the transports to the peers (self, local, shm, tcp, ...), comma-separated"),
                    attribute("TimeoutSeconds", "double", "the timeout of every wait inside a collective"),
                    attribute("WindowBytes", "long",
                            "the largest all-reduce, in bytes per rank, that runs one-shot over the ranks' shared "
                                    + "memory windows (0: none run so: a split communicator, or a peer over another "
                                    + "transport)"),
                    attribute("Closed", "boolean", "whether the communicator has been closed"),
                    attribute("InFlight", "java.lang.String",
                            "the collective in progress with its algorithm and stage, and the requests waited on and "
                                    + "for how long; empty when idle"),
                    attribute("SpinNanos", "long",
                            "how long the latest wait could spin before yielding (50 us; on shared memory up to 500 "
                                    + "us, learned; 0 while the CPUs are contended)"),
                    attribute("IdleWaits", "long", "the waits that had to idle, so far"),
                    attribute("WaitsServedSpinning", "long", "of those, the waits that ended while spinning"),
                    attribute("Spins", "long", "idles spent spinning, so far"),
                    attribute("Yields", "long", "idles spent yielding the CPU, so far"),
                    attribute("Parks", "long", "idles spent parking (20 us each), so far"),
                    attribute("Sleeps", "long",
                            "idles spent asleep until a peer's write on shared memory woke the rank, so far"),
                    attribute("SleepsWoken", "long",
                            "of those, the sleeps a peer's write ended (the others ran into their 1 ms timeout)"),
                    attribute("PreemptedSpins", "long",
                            "spins the kernel preempted, so far (each stops spinning for a while)"),
                    attribute("CpuMoves", "long",
                            "moves of the waiting thread off a CPU it shared with the same-host peer it waited for, "
                                    + "so far"),
            }, null, null, null);

    /** The next communicator id of this JVM. */
    public static long nextId() {
        return IDS.incrementAndGet();
    }

    private final Communicator comm;
    private final Supplier<String> inFlight;
    private final Supplier<Counts> waits;
    private final long id;
    private final long windowBytes;
    private final BooleanSupplier closed;
    private ObjectName name;

    private CommunicatorMBean(Communicator comm, Supplier<String> inFlight, Supplier<Counts> waits, long id,
            long windowBytes, BooleanSupplier closed) {
        this.comm = comm;
        this.inFlight = inFlight;
        this.waits = waits;
        this.id = id;
        this.windowBytes = windowBytes;
        this.closed = closed;
    }

    /** Registers the bean of {@code comm} with the platform MBean server; null when turned off or when it fails
     * (logged). */
    public static CommunicatorMBean register(Communicator comm, Supplier<String> inFlight, Supplier<Counts> waits,
            long id, long windowBytes, BooleanSupplier closed) {
        if (!ENABLED) {
            return null;
        }
        CommunicatorMBean bean = new CommunicatorMBean(comm, inFlight, waits, id, windowBytes, closed);
        try {
            ObjectName n = objectName(comm.rank(), id);
            ManagementFactory.getPlatformMBeanServer().registerMBean(bean, n);
            bean.name = n;
            return bean;
        } catch (Exception | LinkageError e) {
            LOG.log(System.Logger.Level.DEBUG, "could not register the communicator's MBean: " + e);
            return null;
        }
    }

    static ObjectName objectName(int rank, long id) {
        try {
            return new ObjectName("dev.panamax:type=Communicator,rank=" + rank + ",id=" + id);
        } catch (MalformedObjectNameException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Unregisters (idempotent). */
    public void unregister() {
        ObjectName n = name;
        if (n == null) {
            return;
        }
        name = null;
        try {
            MBeanServer server = ManagementFactory.getPlatformMBeanServer();
            server.unregisterMBean(n);
        } catch (InstanceNotFoundException ignored) {
            // already gone
        } catch (Exception e) {
            LOG.log(System.Logger.Level.DEBUG, "could not unregister " + n + ": " + e);
        }
    }

    private String transports() {
        TreeSet<String> kinds = new TreeSet<>();
        for (int p = 0; p < comm.size(); p++) {
            kinds.add(comm.transportTo(p));
        }
        return String.join(",", kinds);
    }

    @Override
    public Object getAttribute(String attribute) throws AttributeNotFoundException {
        return switch (attribute) {
            case "Rank" -> comm.rank();
            case "Size" -> comm.size();
            case "Id" -> id;
            case "Transports" -> transports();
            case "TimeoutSeconds" -> comm.timeoutNanos() / 1e9;
            case "WindowBytes" -> windowBytes;
            case "Closed" -> closed.getAsBoolean();
            case "InFlight" -> inFlight.get();
            case "SpinNanos" -> waits.get().spinNanos();
            case "IdleWaits" -> waits.get().waits();
            case "WaitsServedSpinning" -> waits.get().servedSpinning();
            case "Spins" -> waits.get().spins();
            case "Yields" -> waits.get().yields();
            case "Parks" -> waits.get().parks();
            case "Sleeps" -> waits.get().sleeps();
            case "SleepsWoken" -> waits.get().wokenSleeps();
            case "PreemptedSpins" -> waits.get().preemptedSpins();
            case "CpuMoves" -> waits.get().cpuMoves();
            default -> throw new AttributeNotFoundException(attribute);
        };
    }

    @Override
    public AttributeList getAttributes(String[] attributes) {
        AttributeList list = new AttributeList();
        for (String a : attributes) {
            try {
                list.add(new Attribute(a, getAttribute(a)));
            } catch (AttributeNotFoundException ignored) {
                // left out, as the interface asks
            }
        }
        return list;
    }

    @Override
    public void setAttribute(Attribute attribute) throws AttributeNotFoundException {
        throw new AttributeNotFoundException(attribute.getName() + " is read-only");
    }

    @Override
    public AttributeList setAttributes(AttributeList attributes) {
        return new AttributeList();
    }

    @Override
    public Object invoke(String actionName, Object[] params, String[] signature) throws ReflectionException {
        throw new ReflectionException(new NoSuchMethodException(actionName));
    }

    @Override
    public MBeanInfo getMBeanInfo() {
        return INFO;
    }

    private static MBeanAttributeInfo attribute(String name, String type, String description) {
        return new MBeanAttributeInfo(name, type, description, true, false,
                type.equals("boolean") && name.startsWith("Is"));
    }
}
