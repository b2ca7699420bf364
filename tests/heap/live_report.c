/* Reports taken while threads allocate: 4 workers grow and empty 20,000
 * blocks each (so their tables grow, age young blocks and rebuild) and
 * free each other's blocks, while the main thread takes 50 heap reports
 * through the runtime's API. Every report must show the main thread's
 * 1000 blocks of 16 bytes, whole: a report reading a table its owner just
 * replaced must neither crash nor lose rows. Exit status 0 when all did. */
#include "memprof.h"
#include "runtime_api.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORKERS 4
#define KEEP 20000
#define REPORTS 50
#define STABLE 1000

static volatile bool stop;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *exchange[16];
void *volatile stable[STABLE];

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    void **mine = malloc(KEEP * sizeof *mine);   /* LEAK:array */
    while (!stop) {
        for (int i = 0; i < KEEP; i++)
            mine[i] = malloc(32 + (size_t)(i % 64));   /* LEAK:grow */
        for (int i = 0; i < 1000; i++) {
            void *p = malloc(48 + (size_t)(i % 32));   /* LEAK:churn */
            free(p);
        }
        /* Hand a block to another thread: its free is not its maker's. */
        for (int i = 0; i < 64; i++) {
            void *given = malloc(40);   /* LEAK:handed */
            seed = seed * 1103515245u + 12345u;
            pthread_mutex_lock(&lock);
            void **slot = &exchange[seed >> 28];
            void *taken = *slot;
            *slot = given;
            pthread_mutex_unlock(&lock);
            free(taken);
        }
        for (int i = 0; i < KEEP; i++)
            free(mine[i]);
    }
    free(mine);
    return NULL;
}

int main(void)
{
    report_fn *report;
    text_fn *report_text;
    if (!runtime_api("live_report", &report, &report_text))
        return 2;
    for (int i = 0; i < STABLE; i++)
        stable[i] = malloc(16);   /* LEAK:stable */
    pthread_t t[WORKERS];
    for (long i = 0; i < WORKERS; i++)
        pthread_create(&t[i], NULL, worker, (void *)(i + 1));
    int whole = 0;
    for (int r = 0; r < REPORTS; r++) {
        report(MEMPROF_REPORT_HEAP, 0, 0, 0, NULL, NULL);
        const char *text = report_text();   /* rows follow a "#" header line */
        if (text && strstr(text, "\n1000 16000 ")) {
            whole++;
        } else {
            fprintf(stderr, "live_report: report %d has no row of 1000 x 16 bytes:\n%s\n", r, text ? text : "(null)");
            break;
        }
    }
    stop = true;
    for (int i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 16; i++)
        free(exchange[i]);
    printf("live_report: %d of %d reports whole\n", whole, REPORTS);
    return whole == REPORTS ? 0 : 1;
}
