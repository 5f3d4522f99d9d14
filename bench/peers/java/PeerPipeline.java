// SPDX-License-Identifier: GPL-2.0
//
// PeerPipeline: a message goes round a ring of K Java 21 virtual threads,
// each waiting for its inbox with LockSupport.park and passing on with
// unpark; prints messages (hops) per second for each K.

import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;

public final class PeerPipeline {
	static volatile boolean stop;

	static double once(int k, int ms) throws InterruptedException {
		AtomicLongArray inbox = new AtomicLongArray(k);
		Thread[] t = new Thread[k];
		long[] res = new long[2];

		stop = false;
		for (int i = 0; i < k; i++) {
			final int me = i, next = (i + 1) % k;

			t[i] = Thread.ofVirtual().unstarted(() -> {
				long seen = 0, rounds = 0, start = 0, end = 0;

				for (;;) {
					while (inbox.get(me) == seen)
						LockSupport.park();
					seen++;
					boolean halt = stop;

					if (me == 0 && !halt) {
						long now = System.nanoTime();

						if (rounds == 0) {
							start = now;
							end = now + ms * 1000000L;
						} else if (now >= end) {
							res[0] = now - start;
							res[1] = rounds - 1;
							stop = halt = true;
						}
						rounds++;
					}
					inbox.incrementAndGet(next);
					LockSupport.unpark(t[next]);
					if (halt)
						return;
				}
			});
		}
		for (Thread x : t)
			x.start();
		inbox.incrementAndGet(0);
		LockSupport.unpark(t[0]);
		for (Thread x : t)
			x.join();
		return res[1] * k / (res[0] / 1e9);
	}

	public static void main(String[] args) throws InterruptedException {
		PeerResult o = PeerResult.parse("PeerPipeline", args, true, false);

		once(2, Math.min(o.ms, 100));	/* warm-up */
		for (String s : o.threads.split(",")) {
			int k = Integer.parseInt(s);
			double[] v = new double[o.reps];

			for (int r = 0; r < o.reps; r++)
				v[r] = once(k, o.ms);
			PeerResult.result("pipeline", "vthread-park", "k" + k, "msgs_per_s", false,
					  PeerResult.median(v), o.reps);
		}
	}
}
