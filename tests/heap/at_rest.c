/* The exit report's reading at rest (no thread but the reporting one can
 * change the tables) against the general reading: 4 threads hand blocks to
 * each other (each frees blocks the others made, and addresses come back
 * to other threads), keep some, and 3 exit; the 4th waits. A report now is
 * read the general way (a thread with a record still runs); once the 4th
 * has exited too, the same heap is read at rest. The rows must be the same.
 * Exit status 0 when they are. */
#include "memprof.h"
#include "runtime_api.h"
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 4
#define SLOTS 64
#define ROUNDS 50000

static void *slots[SLOTS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t churned;
static sem_t leave;
void *volatile kept[THREADS * 100];

static void *thread(void *arg)
{
    uintptr_t id = (uintptr_t)arg;
    uint64_t x = id * 0x9E3779B97F4A7C15ull + 1;
    for (int i = 0; i < ROUNDS; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        void *mine = malloc(16 + x % 200);
        pthread_mutex_lock(&lock);
        void *old = slots[x % SLOTS];
        slots[x % SLOTS] = mine;
        pthread_mutex_unlock(&lock);
        free(old);
    }
    for (int i = 0; i < 100; i++)
        kept[id * 100 + (uintptr_t)i] = malloc(24 + id);
    pthread_barrier_wait(&churned);
    if (id == THREADS - 1)
        sem_wait(&leave);
    return NULL;
}

/* The report's rows, without its "#" lines (the thread lines name tids)
 * and the row of the running threads' stacks (`stack`: "1 BYTES "), which
 * the waiting thread takes with it when it exits. */
static void rows_of(const char *text, const char *stack, char *out, size_t size)
{
    size_t n = 0;
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) + 1 : strlen(line);
        if (line[0] != '#' && strncmp(line, stack, strlen(stack)) != 0 && n + len < size) {
            memcpy(out + n, line, len);
            n += len;
        }
        line += len;
    }
    out[n] = '\0';
}

static char general[1 << 20], at_rest[1 << 20];

int main(void)
{
    report_fn *report;
    text_fn *report_text;
    if (!runtime_api("at_rest", &report, &report_text))
        return 2;
    pthread_attr_t attr;
    size_t stack_size = 0;
    pthread_attr_init(&attr);
    pthread_attr_getstacksize(&attr, &stack_size);
    char stack[64];
    snprintf(stack, sizeof stack, "1 %zu ", stack_size);
    pthread_barrier_init(&churned, NULL, THREADS + 1);
    sem_init(&leave, 0, 0);
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, thread, (void *)i);
    pthread_barrier_wait(&churned);
    for (int i = 0; i < THREADS - 1; i++)
        pthread_join(t[i], NULL);
    if (report(MEMPROF_REPORT_HEAP, 0, 0, 0, NULL, NULL) != 0)
        return 3;
    rows_of(report_text(), stack, general, sizeof general);
    sem_post(&leave);
    pthread_join(t[THREADS - 1], NULL);
    if (report(MEMPROF_REPORT_HEAP, 0, 0, 0, NULL, NULL) != 0)
        return 3;
    rows_of(report_text(), stack, at_rest, sizeof at_rest);
    if (strcmp(general, at_rest) != 0 || !strstr(at_rest, "400 10200 ")) {   /* the kept blocks: 100 x (24 + id) each */
        fprintf(stderr, "at_rest: the rows differ:\n--- a thread running\n%s--- at rest\n%s", general, at_rest);
        return 1;
    }
    printf("at_rest: the same rows\n");
    return 0;
}
