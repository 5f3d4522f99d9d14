// SPDX-License-Identifier: GPL-2.0
//
// Procs: what a JVM sizes itself by, Runtime.availableProcessors() (HotSpot
// reads the affinity mask through the C library), and that a few platform
// threads start and finish.  Run as "java Procs.java".  Under umcg-run
// --cores N: jvm_procs=N.
public class Procs {
	public static void main(String[] args) throws InterruptedException {
		Thread[] t = new Thread[4];
		long[] sum = new long[t.length];

		for (int i = 0; i < t.length; i++) {
			final int k = i;
			t[i] = new Thread(() -> {
				for (long j = 0; j < 1000000; j++)
					sum[k] += j;
			});
			t[i].start();
		}
		for (Thread x : t)
			x.join();
		System.out.println("jvm_procs=" + Runtime.getRuntime().availableProcessors());
		System.out.println("jvm_threads=" + (sum[0] == 499999500000L ? "ok" : "bad"));
	}
}
