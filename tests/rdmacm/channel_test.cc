// Event channels through the stand-in librdmacm itself: what a thread that reads a
// channel after the program destroyed it gets, and what channels made and destroyed in
// a loop hold.
#include <dirent.h>
#include <fcntl.h>
#include <rdma/rdma_cma.h>
#include <unistd.h>

#include <cerrno>

#include <gtest/gtest.h>

namespace {

int open_files() {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return -1;
  int n = 0;
  while (readdir(d)) ++n;
  closedir(d);
  return n;
}

rdma_event_channel* nonblocking_channel() {
  rdma_event_channel* ch = rdma_create_event_channel();
  if (ch) fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
  return ch;
}

// rping (rdma-core 44) reads again after acking the last event, racing main's destroy.
TEST(RdmacmChannel, AReadAfterTheDestroyFindsNoEventRatherThanABadFile) {
  rdma_event_channel* ch = nonblocking_channel();
  ASSERT_NE(ch, nullptr);
  rdma_destroy_event_channel(ch);
  rdma_cm_event* event = nullptr;
  errno = 0;
  EXPECT_EQ(rdma_get_cm_event(ch, &event), -1);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(event, nullptr);
}

TEST(RdmacmChannel, AFileOpenedAfterTheDestroyKeepsItsBytes) {
  rdma_event_channel* ch = nonblocking_channel();
  ASSERT_NE(ch, nullptr);
  rdma_destroy_event_channel(ch);
  int p[2];
  ASSERT_EQ(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
  ASSERT_EQ(write(p[1], "x", 1), 1);
  rdma_cm_event* event = nullptr;
  EXPECT_EQ(rdma_get_cm_event(ch, &event), -1);
  char b = 0;
  EXPECT_EQ(read(p[0], &b, 1), 1);
  EXPECT_EQ(b, 'x');
  close(p[0]);
  close(p[1]);
}

TEST(RdmacmChannel, ChannelsMadeAndDestroyedInALoopHoldABoundedNumberOfFiles) {
  const int before = open_files();
  ASSERT_GT(before, 0);
  for (int i = 0; i < 1000; ++i) {
    rdma_event_channel* ch = rdma_create_event_channel();
    ASSERT_NE(ch, nullptr) << "channel " << i << ": " << errno;
    rdma_destroy_event_channel(ch);
  }
  // Two ends for each of the last 64 destroyed channels at most, whatever came before.
  EXPECT_LE(open_files(), before + 2 * 64);
}

}  // namespace
