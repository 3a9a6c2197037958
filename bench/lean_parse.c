/* The lean floor under wattcal-ingest (issue 14, part 3): a minimal C parser of an nvidia-smi
 * --query-gpu log with units (the layout bench/speed_ingest.sh generates from the A100 sample:
 * timestamp, utilization.gpu [%], temperature.gpu, temperature.memory, power.draw [W],
 * power.draw.instant [W], clocks.current.sm [MHz], clocks.current.memory [MHz]).
 *
 *   cc -O2 -std=c11 -o lean_parse bench/lean_parse.c && ./lean_parse LOG
 *
 * Per data line it does the work wattcal cannot skip and nothing more: the timestamp to epoch
 * seconds (date parsed once per distinct date, the time of day per row), power.draw.instant,
 * the SM and memory clocks and temperature.gpu as numbers (units dropped), the non-decreasing
 * time check; it prints the rows, the mean power and the time span so nothing is optimised away.
 * No header matching beyond skipping the first line, no [N/A], no quotes, no error messages
 * beyond the line number: a floor, not a reader. It reads 1 MiB blocks with read(2).
 */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

/* A decimal number at p (leading blanks skipped); *end after it. */
static double number(const char* p, const char** end) {
  while (*p == ' ') ++p;
  int neg = *p == '-';
  if (neg) ++p;
  uint64_t m = 0;
  int frac = -1;
  static const double pow10[] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
  for (;; ++p) {
    if (*p >= '0' && *p <= '9') {
      m = m * 10 + (uint64_t)(*p - '0');
      if (frac >= 0) ++frac;
    } else if (*p == '.' && frac < 0) {
      frac = 0;
    } else {
      break;
    }
  }
  *end = p;
  double v = (double)m / pow10[frac > 0 ? frac : 0];
  return neg ? -v : v;
}

static const char* next_field(const char* p, const char* eol) {
  const char* c = memchr(p, ',', (size_t)(eol - p));
  return c ? c + 1 : eol;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s LOG\n", argv[0]);
    return 2;
  }
  int fd = open(argv[1], O_RDONLY);
  if (fd < 0) {
    perror(argv[1]);
    return 1;
  }
  enum { kBlock = 1 << 20 };
  char* buf = malloc(2 * kBlock + 1);
  size_t have = 0;
  int64_t line = 0, rows = 0;
  char date[10] = {0};
  int64_t day_s = 0;
  double last_t = -1.0, first_t = -1.0, sum_w = 0.0, sum_mhz = 0.0, sum_c = 0.0;
  for (;;) {
    ssize_t n = read(fd, buf + have, kBlock);
    if (n < 0) {
      perror(argv[1]);
      return 1;
    }
    have += (size_t)n;
    buf[have] = '\0';
    char* p = buf;
    char* stop = buf + have;
    for (;;) {
      char* eol = memchr(p, '\n', (size_t)(stop - p));
      if (eol == NULL) break;
      ++line;
      if (line > 1 && eol - p > 24) {
        if (memcmp(p, date, 10) != 0) {
          memcpy(date, p, 10);
          day_s = 86400 * days_from_civil(atoi(p), atoi(p + 5), atoi(p + 8));
        }
        const char* q = p + 11;
        const int h = (q[0] - '0') * 10 + (q[1] - '0');
        const int mi = (q[3] - '0') * 10 + (q[4] - '0');
        const int s = (q[6] - '0') * 10 + (q[7] - '0');
        const int ms = (q[9] - '0') * 100 + (q[10] - '0') * 10 + (q[11] - '0');
        const double t = (double)(day_s + h * 3600 + mi * 60 + s) + ms / 1000.0;
        if (t < last_t) {
          fprintf(stderr, "%s:%lld: time goes backwards\n", argv[1], (long long)line);
          return 1;
        }
        if (first_t < 0) first_t = t;
        last_t = t;
        const char* f = next_field(p, eol);  /* utilization.gpu */
        f = next_field(f, eol);               /* temperature.gpu */
        const char* e;
        sum_c += number(f, &e);
        f = next_field(e, eol);  /* temperature.memory */
        f = next_field(f, eol);  /* power.draw */
        f = next_field(f, eol);  /* power.draw.instant */
        sum_w += number(f, &e);
        f = next_field(e, eol);  /* clocks.sm */
        sum_mhz += number(f, &e);
        f = next_field(e, eol);  /* clocks.mem */
        sum_mhz += number(f, &e);
        ++rows;
      }
      p = eol + 1;
    }
    have = (size_t)(stop - p);
    memmove(buf, p, have);
    if (n == 0) break;
  }
  close(fd);
  free(buf);
  printf("%lld rows, mean power %.3f W, mean clocks+temp %.3f, %.3f s\n", (long long)rows,
         rows ? sum_w / rows : 0.0, rows ? (sum_mhz + sum_c) / rows : 0.0, last_t - first_t);
  return 0;
}
