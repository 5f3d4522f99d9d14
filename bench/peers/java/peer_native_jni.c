// SPDX-License-Identifier: GPL-2.0
/*
 * peer_native_jni.c - JNI bindings of bench/native_lib.c for PeerNative:
 * Java virtual threads call the same native routine as bench/native.
 */
#include <jni.h>

#include "native_lib.h"

JNIEXPORT jstring JNICALL Java_PeerNative_setup(JNIEnv *env, jclass cls, jint variant,
						jint n, jlong c_us, jlong b_us)
{
	char why[256];

	(void)cls;
	if (nb_setup(variant, n, (long)c_us, (long)b_us, why, sizeof(why)))
		return (*env)->NewStringUTF(env, why);
	return NULL;
}

JNIEXPORT jint JNICALL Java_PeerNative_step(JNIEnv *env, jclass cls, jint task)
{
	(void)env, (void)cls;
	return nb_step(task);
}

JNIEXPORT void JNICALL Java_PeerNative_compute(JNIEnv *env, jclass cls, jint task)
{
	(void)env, (void)cls;
	nb_compute(task);
}

JNIEXPORT jint JNICALL Java_PeerNative_blockRead(JNIEnv *env, jclass cls, jint task)
{
	(void)env, (void)cls;
	return nb_block_read(task);
}

JNIEXPORT jint JNICALL Java_PeerNative_count(JNIEnv *env, jclass cls, jint task)
{
	(void)env, (void)cls;
	return nb_count(task);
}

JNIEXPORT void JNICALL Java_PeerNative_stop(JNIEnv *env, jclass cls)
{
	(void)env, (void)cls;
	nb_stop();
}

JNIEXPORT jint JNICALL Java_PeerNative_teardown(JNIEnv *env, jclass cls)
{
	(void)env, (void)cls;
	return nb_teardown();
}

JNIEXPORT jint JNICALL Java_PeerNative_variant(JNIEnv *env, jclass cls, jstring name)
{
	const char *s = (*env)->GetStringUTFChars(env, name, NULL);
	int v;

	(void)cls;
	if (!s)
		return -1;
	v = nb_variant(s);
	(*env)->ReleaseStringUTFChars(env, name, s);
	return v;
}

JNIEXPORT jdouble JNICALL Java_PeerNative_itersPerUs(JNIEnv *env, jclass cls)
{
	(void)env, (void)cls;
	return nb_iters_per_us();
}

/* out: steps done, CPU ns, wall ns, context switches. */
JNIEXPORT void JNICALL Java_PeerNative_snapshot(JNIEnv *env, jclass cls, jlongArray out)
{
	uint64_t d, c, w;
	long x;
	jlong v[4];

	(void)cls;
	nb_snapshot(&d, &c, &w, &x);
	v[0] = (jlong)d;
	v[1] = (jlong)c;
	v[2] = (jlong)w;
	v[3] = (jlong)x;
	(*env)->SetLongArrayRegion(env, out, 0, 4, v);
}
