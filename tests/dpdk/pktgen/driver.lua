-- Drives one pktgen through numbered rounds without a person at the
-- keyboard, for tests/dpdk/cases/pktgen.sh and benches/pktgen-smoke.sh.
--
-- The line put before this file sets CTL, a directory shared with the
-- script that runs pktgen (a bind mount when pktgen runs in a container).
-- Round N starts when CTL/go.N appears, holding one command:
--
--   send PORTS SIZE MS DST...   set each port of the list PORTS (pktgen's
--                               syntax: 0, 0-3, all) to frames of SIZE bytes
--                               (pktgen's size, with the 4-byte FCS) to the
--                               MAC DST (one per port, in order), start
--                               them, send for MS ms, stop them
--   warm PORTS SIZE DST...      as send, but stop as soon as every
--                               port's counters show frames sent (at
--                               most 30 s)
--   idle                        send nothing (the far end sends)
--   quit                        leave pktgen
--
-- After send or idle, once pktgen's port counters are still (pktgen
-- refreshes them once a second; two refreshes without a change), their
-- values for every port (cumulative since start) are written to
-- CTL/done.N, one line a port:
--
--   port P opackets N obytes N ipackets N ibytes N ierrors N oerrors N imissed N
--
-- and, after warm, how long the first frames took to show:
--
--   first_frames_ms N
--
-- The file appears whole (written beside it, then renamed).
--
-- Why warm: pktgen's first start of a port fills every mbuf of the port's
-- transmit pool with the frame (24,576 mbufs, 9 KiB each with -j, pages
-- touched for the first time) before it sends a frame, on the CPU its
-- three threads share. That took 1 to 3.4 s here, longer than a 2 s round,
-- which then sent nothing. Later starts refill the same pages and send at
-- once. So a session's first start is a warm round that waits for frames;
-- measured rounds (send) then send for exactly MS ms.

local function exists(path)
    local f = io.open(path, "r")
    if f then
        f:close()
        return true
    end
    return false
end

local function slurp(path)
    local f = assert(io.open(path, "r"))
    local s = f:read("a")
    f:close()
    return s
end

local function words(s)
    local w = {}
    for x in s:gmatch("%S+") do
        w[#w + 1] = x
    end
    return w
end

local function wait_file(path)
    while not exists(path) do
        pktgen.delay(50)
    end
end

-- Every port's counters, indexed by port, with n the number of ports.
-- pktgen up to 24.10 takes the kind of counters ("port"); 26.02 takes the
-- port list only and keeps each port's counters under "curr".
local function counts()
    local ok, c = pcall(pktgen.portStats, "all", "port")
    if ok then
        return c
    end
    local t = pktgen.portStats("all")
    local r = { n = t.n }
    for p = 0, t.n - 1 do
        r[p] = t[p].curr
    end
    return r
end

-- The port numbers of a port list (0, 0-3, 1,3, all) among n ports.
local function port_numbers(list, n)
    local out = {}
    if list == "all" then
        for p = 0, n - 1 do
            out[#out + 1] = p
        end
        return out
    end
    for part in list:gmatch("[^,]+") do
        local a, b = part:match("^(%d+)-(%d+)$")
        a, b = tonumber(a or part), tonumber(b or part)
        for p = a, b do
            out[#out + 1] = p
        end
    end
    return out
end

-- Whether every port of `ports` sent frames since the counts `before`.
local function all_sent(ports, before)
    local now = counts()
    for _, p in ipairs(ports) do
        if now[p].opackets == before[p].opackets then
            return false
        end
    end
    return true
end

local KEYS = { "opackets", "obytes", "ipackets", "ibytes", "ierrors", "oerrors", "imissed" }

local function same(a, b)
    if a.n ~= b.n then
        return false
    end
    for p = 0, a.n - 1 do
        for _, k in ipairs(KEYS) do
            if a[p][k] ~= b[p][k] then
                return false
            end
        end
    end
    return true
end

local function settled()
    local last = counts()
    local still = 0
    while still < 2 do
        pktgen.delay(1100)
        local now = counts()
        if same(now, last) then
            still = still + 1
        else
            still = 0
        end
        last = now
    end
    return last
end

local function report(path, c, first_ms)
    local lines = {}
    for p = 0, c.n - 1 do
        local s = c[p]
        local l = "port " .. p
        for _, k in ipairs(KEYS) do
            l = l .. " " .. k .. " " .. string.format("%d", s[k])
        end
        lines[#lines + 1] = l
    end
    if first_ms then
        lines[#lines + 1] = "first_frames_ms " .. first_ms
    end
    local f = assert(io.open(path .. ".tmp", "w"))
    f:write(table.concat(lines, "\n") .. "\n")
    f:close()
    assert(os.rename(path .. ".tmp", path))
end

-- Waits (at most 5 s) until pktgen itself sees every port of PORTS up:
-- it learns the link state by polling it, after the driver has logged it,
-- and a start before that may send nothing.
local function link_up(ports)
    for _ = 1, 50 do
        local ok, st = pcall(pktgen.linkState, ports)
        local up = ok and type(st) == "table"
        if up then
            for k, v in pairs(st) do
                if k ~= "n" and not tostring(v):find("UP", 1, true) then
                    up = false
                end
            end
        end
        if up then
            return
        end
        pktgen.delay(100)
    end
end

-- Makes sure each port of `ports` has a transmit rate before a start.
-- pktgen up to 23.10 zeroes a port's link record once a second, on its
-- timer thread, before reading the link again; a rate computed in that
-- window (by `set size`, on this thread) finds no link speed, spaces
-- bursts pktgen.hz * burst cycles apart (a minute), and the transmit
-- lcore schedules its next burst that far ahead: the round sends
-- nothing. Such a rate shows as tx_pps 0 in portInfo's info.tx_debug.
-- Cycles set to 0 make the lcore read the link, compute the rate again
-- and restart its schedule from now.
local function rate_set(list)
    for _, p in ipairs(list) do
        for _ = 1, 30 do
            local ok, info = pcall(pktgen.portInfo, tostring(p))
            local port = ok and type(info) == "table" and info[p]
            port = type(port) == "table" and port.info
            local dbg = type(port) == "table" and port.tx_debug
            if type(dbg) ~= "table" or (tonumber(dbg.tx_pps) or 1) > 0 then
                break
            end
            print("driver.lua: port " .. p .. " has no transmit rate (tx_pps 0): computing it again")
            pktgen.set(tostring(p), "cycles", 0)
            pktgen.delay(100)
        end
    end
end

local round = 1
while true do
    local go = CTL .. "/go." .. round
    wait_file(go)
    local w = words(slurp(go))
    local first_ms
    if w[1] == "quit" then
        break
    elseif w[1] == "send" or w[1] == "warm" then
        local warm = w[1] == "warm"
        local ports, size = w[2], tonumber(w[3])
        local ms, macs = tonumber(w[4]), 5
        if warm then
            ms, macs = nil, 4
        end
        local first = tonumber(ports:match("^%d+")) or 0
        for i = macs, #w do
            pktgen.set_mac(tostring(first + i - macs), "dst", w[i])
        end
        pktgen.set(ports, "size", size)
        link_up(ports)
        local before = counts()
        local list = port_numbers(ports, before.n)
        rate_set(list)
        pktgen.start(ports)
        if warm then
            -- pktgen refreshes its counters once a second: the first
            -- frames show within a second of being sent.
            first_ms = 0
            while not all_sent(list, before) and first_ms < 30000 do
                pktgen.delay(100)
                first_ms = first_ms + 100
            end
        else
            pktgen.delay(ms)
        end
        pktgen.stop(ports)
    end
    report(CTL .. "/done." .. round, settled(), first_ms)
    round = round + 1
end
pktgen.quit()
