// SPDX-License-Identifier: GPL-2.0
//
// PeerResult: options and result lines shared by the Java 21 virtual-thread
// peers of bench/ (impl=java backend=vthreads).

import java.util.Arrays;

final class PeerResult {
	int reps = 5;
	int ms = 200;
	String threads = "2,4,8,16,32,64";
	int port = 0;
	boolean platform = false;

	static PeerResult parse(String prog, String[] args, boolean ring, boolean server) {
		PeerResult o = new PeerResult();

		for (int i = 0; i < args.length; i++) {
			String a = args[i];

			try {
				if (a.equals("--smoke") && !server) {
					o.reps = 1;
					o.ms = 20;
				} else if (a.equals("--reps") && !server) {
					o.reps = Integer.parseInt(args[++i]);
				} else if (a.equals("--ms") && !server) {
					o.ms = Integer.parseInt(args[++i]);
				} else if (a.equals("--threads") && ring) {
					o.threads = args[++i];
				} else if (a.equals("--port") && server) {
					o.port = Integer.parseInt(args[++i]);
				} else if (a.equals("--platform") && server) {
					o.platform = true;
				} else if (a.equals("-h") || a.equals("--help")) {
					System.out.println("Usage: java " + prog + (server ? " [--port N] [--platform]"
						: " [--reps N] [--ms MS] [--smoke]" + (ring ? " [--threads LIST]" : "")));
					System.exit(0);
				} else {
					throw new IllegalArgumentException("unknown argument '" + a + "'");
				}
			} catch (RuntimeException e) {
				System.err.println(prog + ": error: " + e.getMessage() + " (see --help)");
				System.exit(2);
			}
		}
		if (o.reps < 1 || o.ms < 1) {
			System.err.println(prog + ": error: --reps and --ms must be positive");
			System.exit(2);
		}
		return o;
	}

	static double median(double[] v) {
		double[] s = v.clone();

		Arrays.sort(s);
		int n = s.length;
		return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	}

	static void result(String bench, String variant, String kase, String metric,
			   boolean lowerBetter, double value, int n) {
		System.out.printf("bench=%s impl=java backend=vthreads variant=%s case=%s metric=%s "
				  + "better=%s value=%.6g n=%d%n", bench, variant, kase, metric,
				  lowerBetter ? "lower" : "higher", value, n);
	}
}
