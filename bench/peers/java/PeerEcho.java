// SPDX-License-Identifier: GPL-2.0
//
// PeerEcho: a virtual-thread-per-connection TCP echo server on 127.0.0.1
// with plain blocking socket streams (Loom parks the virtual thread
// underneath); with --platform, a platform thread per connection (the JVM
// that bench/realservers runs under umcg-run).  Prints
// "PeerEcho: listening on port N, P processors".

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;

public final class PeerEcho {
	static void serve(Socket s) {
		try (s; InputStream in = s.getInputStream(); OutputStream out = s.getOutputStream()) {
			byte[] buf = new byte[4096];
			int n;

			s.setTcpNoDelay(true);
			while ((n = in.read(buf)) > 0)
				out.write(buf, 0, n);
		} catch (Exception e) {
			/* the peer went away */
		}
	}

	public static void main(String[] args) throws Exception {
		PeerResult o = PeerResult.parse("PeerEcho", args, false, true);
		ServerSocket ls = new ServerSocket(o.port, 4096, InetAddress.getLoopbackAddress());

		Thread.Builder tb = o.platform ? Thread.ofPlatform().name("echo-", 0)
					       : Thread.ofVirtual();

		System.out.println("PeerEcho: listening on port " + ls.getLocalPort() + ", " +
				   Runtime.getRuntime().availableProcessors() + " processors");
		System.out.flush();
		for (;;) {
			Socket s = ls.accept();

			tb.start(() -> serve(s));
		}
	}
}
