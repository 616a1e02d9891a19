// Happens-before annotations for ThreadSanitizer.
//
// oneTBB from Debian is not built with -fsanitize=thread, so TSan cannot
// see that putting a task into a TBB queue happens before the task runs,
// and reports every hand-off through the executor as a race. The context
// marks the hand-offs itself: release when a task is submitted or finishes,
// acquire when it starts or when all tasks have been waited for. Without
// TSan these compile to nothing.
#ifndef SLUICE_PIPELINE_INTERNAL_TSAN_H_
#define SLUICE_PIPELINE_INTERNAL_TSAN_H_

#if defined(__SANITIZE_THREAD__)
#define SLUICE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SLUICE_TSAN 1
#endif
#endif

#ifdef SLUICE_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#define SLUICE_TSAN_ACQUIRE(addr) __tsan_acquire(static_cast<void*>(addr))
#define SLUICE_TSAN_RELEASE(addr) __tsan_release(static_cast<void*>(addr))
#else
#define SLUICE_TSAN_ACQUIRE(addr) ((void)0)
#define SLUICE_TSAN_RELEASE(addr) ((void)0)
#endif

#endif  // SLUICE_PIPELINE_INTERNAL_TSAN_H_
