// SPDX-License-Identifier: Apache-2.0 OR MIT
// Loads each object with libbpf into the host kernel and prints, per
// program, the kernel's verdict and verifier statistics as tab-separated
// values; with --run, runs one program on packet files (BPF_PROG_TEST_RUN).  This is how EXPECTED.md was measured (see measure.sh); it is a
// documentation tool, not part of bpfvet.
//
// Columns: object program section verdict errno verified_insns
//          processed_insns total_states peak_states max_states_per_insn
//          mark_read verification_usec last_error_line
// verdict is "success" or "failure" (the verifier rejected it, or libbpf
// refused the object; errno and the last line say which).  When a whole
// object does not load, each program is loaded again on its own.
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

// Big enough that even a level-1 log of a rejected program never overflows
// (an overflow would turn a verdict into ENOSPC); pages are touched lazily.
#define LOG_SIZE (256u << 20)
#define MAX_PROGS 64

static int quiet_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

struct stats {
	long processed, total_states, peak_states, max_states, mark_read, usec;
	char last[1024];
};

// Pulls the figures out of the log's closing lines, and the last line that
// is not one of them: for a rejected program, the verifier's error.
static void parse_log(const char *log, struct stats *st)
{
	const char *line = log;

	memset(st, 0, sizeof(*st));
	st->processed = st->total_states = st->peak_states = -1;
	st->max_states = st->mark_read = st->usec = -1;
	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char buf[1024];

		if (len >= sizeof(buf))
			len = sizeof(buf) - 1;
		memcpy(buf, line, len);
		buf[len] = 0;
		if (sscanf(buf, "processed %ld insns (limit %*d) max_states_per_insn %ld "
				"total_states %ld peak_states %ld mark_read %ld",
			   &st->processed, &st->max_states, &st->total_states,
			   &st->peak_states, &st->mark_read) == 5) {
		} else if (sscanf(buf, "verification time %ld usec", &st->usec) == 1) {
		} else if (strncmp(buf, "stack depth", 11) == 0) {
		} else if (len > 0) {
			snprintf(st->last, sizeof(st->last), "%s", buf);
		}
		line = end ? end + 1 : NULL;
	}
}

// Loads the object with only program `only` enabled (all of them when
// only < 0) and prints a row per loaded program.  Returns libbpf's error.
static int load_and_report(const char *path, unsigned level, int only)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	char *logs[MAX_PROGS] = { 0 };
	int n = 0, err, i;

	obj = bpf_object__open_file(path, NULL);
	if (!obj) {
		printf("%s\t-\t-\tfailure\t%d\t-\t-\t-\t-\t-\t-\t-\tlibbpf could not open the object\n",
		       path, errno);
		return -errno;
	}
	bpf_object__for_each_program(prog, obj) {
		if (n == MAX_PROGS)
			break;
		if (only >= 0 && n != only) {
			bpf_program__set_autoload(prog, false);
		} else {
			logs[n] = calloc(1, LOG_SIZE);
			if (!logs[n])
				exit(1);
			bpf_program__set_log_level(prog, level);
			bpf_program__set_log_buf(prog, logs[n], LOG_SIZE);
		}
		n++;
	}
	err = bpf_object__load(obj);
	// A failed whole-object load only says that some program failed:
	// the caller retries program by program to tell which.
	if (err && only < 0)
		goto out;

	i = 0;
	bpf_object__for_each_program(prog, obj) {
		struct bpf_prog_info info;
		__u32 info_len = sizeof(info);
		struct stats st;
		long verified = -1;
		int fd = bpf_program__fd(prog);

		if (i == n)
			break;
		if (!logs[i]) {
			i++;
			continue;
		}
		parse_log(logs[i], &st);
		memset(&info, 0, sizeof(info));
		if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &info_len) == 0)
			verified = info.verified_insns;
		printf("%s\t%s\t%s\t%s\t%d\t%ld\t%ld\t%ld\t%ld\t%ld\t%ld\t%ld\t%s\n",
		       path, bpf_program__name(prog), bpf_program__section_name(prog),
		       fd >= 0 ? "success" : "failure", fd >= 0 ? 0 : -err, verified,
		       st.processed, st.total_states, st.peak_states, st.max_states,
		       st.mark_read, st.usec, fd >= 0 ? "" : st.last);
		i++;
	}
out:
	for (i = 0; i < n; i++)
		free(logs[i]);
	bpf_object__close(obj);
	return err;
}

static int measure(const char *path, unsigned level)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	int n = 0, i, failed = 0;

	if (load_and_report(path, level, -1) == 0)
		return 0;
	obj = bpf_object__open_file(path, NULL);
	if (!obj)
		return 1;
	bpf_object__for_each_program(prog, obj)
		n++;
	bpf_object__close(obj);
	for (i = 0; i < n && i < MAX_PROGS; i++)
		failed |= load_and_report(path, level, i) != 0;
	return failed;
}

static int read_file(const char *path, unsigned char *buf, size_t cap, size_t *len)
{
	FILE *f = fopen(path, "rb");

	if (!f)
		return -1;
	*len = fread(buf, 1, cap, f);
	fclose(f);
	return 0;
}

// Runs program `name` of `path` once on each packet with BPF_PROG_TEST_RUN,
// each time in a freshly loaded object (so maps start as the object sets
// them).  Prints: packet retval out_len same|changed|- (output vs input;
// a flow dissector returns no packet: "-").  The kernel refuses some
// frames outright (EINVAL for skb programs on a truncated IP header).
static int run_packets(const char *path, const char *name, char **pkts, int n)
{
	static unsigned char in[65536], out[65536 + 4096];
	int i, failed = 0;

	for (i = 0; i < n; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, opts);
		struct bpf_object *obj = bpf_object__open_file(path, NULL);
		struct bpf_program *prog;
		size_t len;
		int err;

		if (!obj || read_file(pkts[i], in, sizeof(in), &len))
			return 1;
		prog = bpf_object__find_program_by_name(obj, name);
		if (!prog || bpf_object__load(obj)) {
			fprintf(stderr, "%s: program %s missing or not loadable\n", path, name);
			bpf_object__close(obj);
			return 1;
		}
		opts.data_in = in;
		opts.data_size_in = len;
		opts.data_out = out;
		opts.data_size_out = sizeof(out);
		opts.repeat = 1;
		err = bpf_prog_test_run_opts(bpf_program__fd(prog), &opts);
		if (err) {
			printf("%s\terror %d\t-\t-\n", pkts[i], -errno);
			failed = 1;
		} else {
			enum bpf_prog_type type = bpf_program__type(prog);
			// Programs that see the skb from L3 get their input back
			// with the 14-byte Ethernet header zeroed: not a change.
			size_t l2 = type == BPF_PROG_TYPE_SOCKET_FILTER ||
					    type == BPF_PROG_TYPE_CGROUP_SKB ? 14 : 0;
			static const unsigned char zero[14];
			int same = opts.data_size_out == len && len >= l2 &&
				   memcmp(out, zero, l2) == 0 &&
				   memcmp(in + l2, out + l2, len - l2) == 0;

			printf("%s\t%u\t%u\t%s\n", pkts[i], opts.retval, opts.data_size_out,
			       type == BPF_PROG_TYPE_FLOW_DISSECTOR ? "-" : same ? "same" : "changed");
		}
		bpf_object__close(obj);
	}
	return failed;
}

int main(int argc, char **argv)
{
	unsigned level = 1 | 4;
	int i = 1, failed = 0;

	libbpf_set_strict_mode(LIBBPF_STRICT_ALL);
	libbpf_set_print(quiet_print);
	if (argc > 4 && strcmp(argv[1], "--run") == 0)
		return run_packets(argv[2], argv[3], argv + 4, argc - 4);
	if (argc > 2 && strcmp(argv[1], "-l") == 0) {
		level = (unsigned)strtoul(argv[2], NULL, 0);
		i = 3;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: %s [-l LOG_LEVEL] OBJ...\n"
				"       %s --run OBJ PROG PACKET...\n", argv[0], argv[0]);
		return 2;
	}
	for (; i < argc; i++)
		failed |= measure(argv[i], level);
	return failed;
}
