// SPDX-License-Identifier: GPL-2.0
//
// PeerNative: bench/native's workload from Java 21 virtual threads.  Each of
// N virtual threads repeats the native step of bench/native_lib.c through
// JNI (libpeernative.so, next to this class): compute C us, then block in
// native code for B us.  A virtual thread in a native frame cannot unmount,
// so every block pins its carrier: the scheduler's parallelism (the cores)
// caps the tasks in flight.  Variants read, mutex, fault: the C routine's;
// mutex-sync: pairs of tasks share a Java monitor and the read block
// happens inside synchronized (pinned in 21 as well; contention on the
// monitor blocks the carrier too).
// Prints impl=java backend=vthreads lines: tasks_per_s, cores_busy and
// ctxsw_per_op (getrusage over the timed window, every thread of the JVM).

import java.io.File;
import java.util.ArrayList;
import java.util.List;

final class PeerNative {
	static native String setup(int variant, int n, long cUs, long bUs);
	static native int step(int task);
	static native void compute(int task);
	static native int blockRead(int task);
	static native int count(int task);
	static native void stop();
	static native int teardown();
	static native int variant(String name);
	static native double itersPerUs();
	static native void snapshot(long[] out);

	static final int READ = 0;	/* native_lib.h: NB_READ */
	static final int SYNC = -2;	/* mutex-sync: Java's own lock */

	static Object[] locks;

	static void syncLoop(int i) {
		for (;;) {
			compute(i);
			int r;

			synchronized (locks[i / 2]) {
				r = blockRead(i);
			}
			if (r != 0 || count(i) != 0)
				return;
		}
	}

	/* { tasks/s, cores busy, ctxsw/op }, or null and the reason printed. */
	static double[] once(String name, int v, int n, long c, long b, int ms)
		throws InterruptedException {
		String why = setup(v == SYNC ? READ : v, n, c, b);

		if (why != null) {
			System.out.println("bench=native impl=java backend=vthreads variant=" + name
					   + " case=- metric=- better=- value=n/a n=0 reason=" + why);
			return null;
		}
		locks = new Object[n / 2 + 1];
		for (int i = 0; i < locks.length; i++)
			locks[i] = new Object();
		List<Thread> ts = new ArrayList<>();
		for (int i = 0; i < n; i++) {
			final int id = i;

			ts.add(Thread.ofVirtual().start(v == SYNC ? () -> syncLoop(id)
							  : () -> { while (step(id) == 0) { } }));
		}
		long[] s0 = new long[4], s1 = new long[4];

		Thread.sleep(Math.max(10, ms / 5));
		snapshot(s0);
		Thread.sleep(ms);
		snapshot(s1);
		stop();
		for (Thread t : ts)
			t.join();
		int err = teardown();
		if (err != 0) {
			System.err.println("PeerNative: error: the native step failed: errno " + -err);
			System.exit(1);
		}
		double ops = s1[0] - s0[0], wall = s1[2] - s0[2];

		return new double[] { ops / (wall / 1e9), (s1[1] - s0[1]) / wall,
				      ops > 0 ? (s1[3] - s0[3]) / ops : 0 };
	}

	public static void main(String[] args) throws Exception {
		int reps = 5, ms = 200;
		boolean smoke = false;
		String vlist = "read,mutex,fault,mutex-sync", mlist = null, cblist = null;

		for (int i = 0; i < args.length; i++) {
			String a = args[i];

			try {
				switch (a) {
				case "--smoke" -> smoke = true;
				case "--reps" -> reps = Integer.parseInt(args[++i]);
				case "--ms" -> ms = Integer.parseInt(args[++i]);
				case "--variants" -> vlist = args[++i];
				case "--mult" -> mlist = args[++i];
				case "--cb" -> cblist = args[++i];
				case "-h", "--help" -> {
					System.out.println("Usage: java PeerNative [--reps N] [--ms MS] [--smoke]"
							   + " [--variants read,mutex,fault,mutex-sync]"
							   + " [--mult LIST] [--cb C/B,...]");
					System.exit(0);
				}
				default -> throw new IllegalArgumentException("unknown argument '" + a + "'");
				}
			} catch (RuntimeException e) {
				System.err.println("PeerNative: error: " + e.getMessage() + " (see --help)");
				System.exit(2);
			}
		}
		if (smoke) {
			reps = 1;
			ms = 20;
		}
		if (mlist == null)
			mlist = smoke ? "4" : "4,32,256";
		if (cblist == null)
			cblist = smoke ? "10/100" : "10/100,100/1000";
		if (reps < 1 || ms < 1) {
			System.err.println("PeerNative: error: --reps and --ms must be positive");
			System.exit(2);
		}
		File dir = new File(PeerNative.class.getProtectionDomain().getCodeSource()
				    .getLocation().toURI());
		System.load(new File(dir, "libpeernative.so").getAbsolutePath());

		int cores = Runtime.getRuntime().availableProcessors();
		System.err.printf("PeerNative: %d cores, busy loop %.1f iterations/us%n", cores,
				  itersPerUs());
		for (String m : mlist.split(",")) {
			int mult = Integer.parseInt(m);

			for (String p : cblist.split(",")) {
				String[] cb = p.split("/");
				long c = Long.parseLong(cb[0]), b = Long.parseLong(cb[1]);

				for (String name : vlist.split(",")) {
					int v = name.equals("mutex-sync") ? SYNC : variant(name);

					if (v == -1) {
						System.err.println("PeerNative: error: unknown variant '" + name + "'");
						System.exit(2);
					}
					String kase = "x" + mult + "-c" + c + "-b" + b;
					int n = mult * cores;
					double[] tps = new double[reps], busy = new double[reps],
						cs = new double[reps];
					boolean ok = true;

					System.err.printf("PeerNative: %s %s (N=%d)%n", name, kase, n);
					for (int r = 0; r < reps && ok; r++) {
						double[] w = once(name, v, n, c, b, ms);

						if (w == null) {
							ok = false;
							break;
						}
						tps[r] = w[0];
						busy[r] = w[1];
						cs[r] = w[2];
					}
					if (!ok)
						continue;
					PeerResult.result("native", name, kase, "tasks_per_s", false,
							  PeerResult.median(tps), reps);
					PeerResult.result("native", name, kase, "cores_busy", false,
							  PeerResult.median(busy), reps);
					PeerResult.result("native", name, kase, "ctxsw_per_op", true,
							  PeerResult.median(cs), reps);
				}
			}
		}
	}
}
