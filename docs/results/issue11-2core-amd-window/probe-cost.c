#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
static inline uint64_t now(void){struct timespec ts;clock_gettime(CLOCK_MONOTONIC,&ts);return (uint64_t)ts.tv_sec*1000000000ull+ts.tv_nsec;}
static uint32_t hist[64];
static uint64_t edges[63];
int main(void){
	enum{N=2000000};
	for(int k=0;k<63;k++) edges[k]=(uint64_t)(1000*exp2((k+1-32)/16.0));
	for(int rep=0;rep<3;rep++){
	volatile uint64_t sink=0;
	uint64_t a=now();
	for(int i=0;i<N;i++){uint64_t t0=now(); sink+=i; uint64_t t1=now(); sink+=t1-t0;}
	uint64_t b=now();
	for(int i=0;i<N;i++){uint64_t x=sink+i*7; double r=(double)(x%3000+1)/1000.0; int q=(int)floor(log2(r)*16)+32; hist[q<0?0:q>63?63:q]++;}
	uint64_t c=now();
	for(int i=0;i<N;i++){uint64_t x=(sink+i*7)%3000+1; int lo=0,hi=63; while(lo<hi){int m=(lo+hi)/2; if(x>=edges[m]) lo=m+1; else hi=m;} hist[lo]++;}
	uint64_t d=now();
	printf("2 reads %.1f ns, log2 bucket %.1f ns, search bucket %.1f ns\n",(double)(b-a)/N,(double)(c-b)/N,(double)(d-c)/N);}
	return 0;}
