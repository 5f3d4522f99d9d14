// SPDX-License-Identifier: GPL-2.0
//
// PeerSwitch: two Java 21 virtual threads pass a token back and forth with
// LockSupport.park/unpark; prints ns per switch (the median of --reps).
// The first repetition's JIT warm-up is not counted.

import java.util.concurrent.locks.LockSupport;

public final class PeerSwitch {
	static volatile int turn;	/* 0: A's, 1: B's, 2: stop */
	static volatile Thread a, b;

	static double once(int ms) throws InterruptedException {
		long[] res = new long[2];

		turn = 0;
		b = Thread.ofVirtual().unstarted(() -> {
			for (;;) {
				while (turn == 0)
					LockSupport.park();
				if (turn == 2)
					return;
				turn = 0;
				LockSupport.unpark(a);
			}
		});
		a = Thread.ofVirtual().unstarted(() -> {
			long n = 0, start = System.nanoTime(), end = start + ms * 1000000L, t;

			do {
				for (int i = 0; i < 16; i++) {
					turn = 1;
					LockSupport.unpark(b);
					while (turn == 1)
						LockSupport.park();
				}
				n += 16;
				t = System.nanoTime();
			} while (t < end);
			res[0] = t - start;
			res[1] = n;
			turn = 2;
			LockSupport.unpark(b);
		});
		b.start();
		a.start();
		a.join();
		b.join();
		return (double)res[0] / (2 * res[1]);
	}

	public static void main(String[] args) throws InterruptedException {
		PeerResult o = PeerResult.parse("PeerSwitch", args, false, false);
		double[] v = new double[o.reps];

		once(Math.min(o.ms, 100));	/* warm-up */
		for (int r = 0; r < o.reps; r++)
			v[r] = once(o.ms);
		PeerResult.result("switch", "vthread-park", "-", "ns_per_switch", true,
				  PeerResult.median(v), o.reps);
	}
}
